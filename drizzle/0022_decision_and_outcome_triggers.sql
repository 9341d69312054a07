-- Work the database does with a state change, so the edge need not send it as statements of its
-- own (edge/db/schema.ts explains them; issue 35: fewer D1 statements per request).
-- A run parked for an approval runs again once the owner decides it, either way, in the same
-- statement that decides it. Only the decision that moves the approval from pending wins (the
-- caller's conditional update), and only a run still waiting for approval resumes: a run the
-- fence ended (cancelled, past its deadline, revoked) keeps its outcome. The decision time is
-- the run's update time (the run's own when a writer left it unset).
CREATE TRIGGER `runs_resume_when_approval_decided`
AFTER UPDATE OF `state` ON `approvals`
WHEN OLD.state = 'pending' AND NEW.state IN ('approved', 'denied')
BEGIN
  UPDATE `runs` SET `state` = 'running', `updated_at` = COALESCE(NEW.decided_at, `updated_at`)
  WHERE `id` = NEW.run_id AND `state` = 'waiting_for_approval';
END;
--> statement-breakpoint
-- A write's effect watermark ends in the state its call ends in, when the call leaves
-- dispatching (recorded outcome, fallback without result, lost dispatch): succeeded, failed or
-- uncertain, finished at the call's update time. Only a watermark still committed moves, so an
-- effect's outcome is written once.
CREATE TRIGGER `effects_finish_with_their_call`
AFTER UPDATE OF `state` ON `tool_calls`
WHEN OLD.state = 'dispatching' AND NEW.state IN ('succeeded', 'failed', 'uncertain')
BEGIN
  UPDATE `effects` SET `state` = NEW.state, `finished_at` = NEW.updated_at
  WHERE `tool_call_id` = NEW.id AND `state` = 'committed';
END;
