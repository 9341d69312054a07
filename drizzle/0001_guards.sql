-- Invariants the database enforces whatever the code does (edge/db/schema.ts explains them).
-- A call may only become active (waiting for approval or dispatching) while its run is running;
-- together with the partial unique index tool_calls_one_active_per_run this makes "one action
-- at a time per run" hold under concurrent requests.
CREATE TRIGGER `tool_calls_active_requires_running_run`
BEFORE INSERT ON `tool_calls`
WHEN NEW.state IN ('waiting_for_approval', 'dispatching')
  AND (SELECT state FROM runs WHERE id = NEW.run_id) IS NOT 'running'
BEGIN
  SELECT RAISE(ABORT, 'guard:run_not_active');
END;
--> statement-breakpoint
-- The effect watermark is written only for a call that this same batch moved to dispatching.
CREATE TRIGGER `effects_require_dispatching_call`
BEFORE INSERT ON `effects`
WHEN (SELECT state FROM tool_calls WHERE id = NEW.tool_call_id) IS NOT 'dispatching'
BEGIN
  SELECT RAISE(ABORT, 'guard:call_not_dispatching');
END;
