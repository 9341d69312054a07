/**
 * The edge's persistent state (D1 on Workers, a SQLite file elsewhere). Timestamps are epoch ms.
 * Each capability owns its tables (`edge/<capability>/tables.ts`); this file re-exports them all,
 * and drizzle-kit generates the migrations from it into `drizzle/`, applied with
 * `wrangler d1 migrations apply`. Invariants the database itself enforces (see the custom
 * migrations `drizzle/0001_guards.sql`, `0003_grant_guard.sql`, `0022_decision_and_outcome_triggers.sql`):
 * - at most one active call (waiting for approval or dispatching) per run: a partial unique index;
 * - a call can only become active while its run is `running`: a trigger;
 * - an effect watermark can only be written for a call that is `dispatching`, once: a trigger and
 *   a unique index;
 * - a grant use is charged only while the grant is live: a trigger;
 * - a run waiting for approval runs again when its approval is decided (pending to approved or
 *   denied), in the deciding statement: the trigger `runs_resume_when_approval_decided`; a run
 *   that already ended is never resumed;
 * - an effect still `committed` ends in its call's state (succeeded, failed, uncertain; finished
 *   at the call's update time) when the call leaves `dispatching`, in the call's statement: the
 *   trigger `effects_finish_with_their_call`. The edge sends no statement of its own for these.
 */

export * from '../artifacts/tables.ts';
export * from '../auth/tables.ts';
export * from '../console/tables.ts';
export * from '../fleet/tables.ts';
export * from '../grants/tables.ts';
export * from '../mcp/tables.ts';
export * from '../memories/tables.ts';
export * from '../metrics/tables.ts';
export * from '../notifications/tables.ts';
export * from '../pipeline/tables.ts';
export * from '../policy/tables.ts';
export * from '../profiles/tables.ts';
export * from '../quotas/tables.ts';
export * from '../recipes/tables.ts';
export * from '../runs/tables.ts';
export * from '../schedules/tables.ts';
export * from '../sign-in/tables.ts';
