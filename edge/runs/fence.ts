import { and, eq, inArray, type SQL, sql } from 'drizzle-orm';
import { ACTIVE_RUN_STATES, type RunState } from '../../shared/api.ts';
import type { ErrorCode } from '../../shared/errors.ts';
import { approvals, runs, signInWaits, toolCalls } from '../db/schema.ts';
import type { Database } from '../ports.ts';

/** Why a run's parked work was fenced: recorded on its sign-in waits (`fence_reason`). */
export type FenceReason = 'cancelled' | 'deadline_exceeded' | 'profile_revoked' | 'recipe_limit';

/** What the calls a fence cancels say, per reason. */
const FENCED_CALL: Record<FenceReason, { readonly code: ErrorCode; readonly message: string }> = {
  cancelled: { code: 'run_not_active', message: 'the run was cancelled' },
  deadline_exceeded: { code: 'deadline_exceeded', message: 'the run deadline passed before approval' },
  profile_revoked: { code: 'profile_revoked', message: "the run's profile was revoked" },
  recipe_limit: { code: 'deadline_exceeded', message: "the recipe's 15-minute limit passed before approval" },
};

/** Which runs a fence ends: one run by id, or every run an SQL condition on `runs` selects. */
export type FencedRuns = { readonly runId: string } | { readonly where: SQL };

/** How the fenced runs end. */
export interface RunFence {
  readonly reason: FenceReason;
  /** The state the runs end in (`cancelled`, `deadline_exceeded`, `failed`; `partial` for a recipe run past its limit). */
  readonly endState: Extract<RunState, 'cancelled' | 'deadline_exceeded' | 'failed' | 'partial'>;
  /** Recorded as the runs' summary when given (a revocation says why the run failed). */
  readonly summary?: string;
  /** Overrides the fenced calls' error message (e.g. naming the revoked profile). */
  readonly callMessage?: string;
  /** Epoch ms. */
  readonly now: number;
}

/**
 * The statements that fence runs (DESIGN.md section 10; ADR-0164 part 3: cancellation, deadlines
 * and revocation fence the continuation), for one `db.batch`, in this order: the runs that have
 * not ended move to `fence.endState` (a conditional update: only from an active state, so a run
 * that already ended keeps its outcome; the first result's row count says whether it won); their
 * pending approvals are cancelled; their calls waiting for approval are cancelled with the
 * reason's error code; their pending sign-in waits are fenced with the reason, so a later
 * sign-in never resumes them. A call already being dispatched is not touched: it finishes and is
 * recorded, but nothing new starts. The caller adds whatever else its batch must change.
 */
export function fenceRunStatements(db: Database, which: FencedRuns, fence: RunFence) {
  const { now } = fence;
  const selected = 'runId' in which ? eq(runs.id, which.runId) : which.where;
  const runIds = 'runId' in which ? sql`(${which.runId})` : sql`(SELECT ${runs.id} FROM ${runs} WHERE ${which.where})`;
  const call = FENCED_CALL[fence.reason];
  return [
    db
      .update(runs)
      .set({ state: fence.endState, ...(fence.summary !== undefined ? { reportSummary: fence.summary } : {}), updatedAt: now })
      .where(and(selected, inArray(runs.state, [...ACTIVE_RUN_STATES]))),
    db
      .update(approvals)
      .set({ state: 'cancelled', decidedAt: now })
      .where(and(eq(approvals.state, 'pending'), sql`${approvals.runId} IN ${runIds}`)),
    db
      .update(toolCalls)
      .set({ state: 'cancelled', errorCode: call.code, errorMessage: fence.callMessage ?? call.message, updatedAt: now })
      .where(and(eq(toolCalls.state, 'waiting_for_approval'), sql`${toolCalls.runId} IN ${runIds}`)),
    db
      .update(signInWaits)
      .set({ state: 'fenced', fenceReason: fence.reason, endedAt: now })
      .where(and(eq(signInWaits.state, 'pending'), sql`${signInWaits.runId} IN ${runIds}`)),
  ] as const;
}
