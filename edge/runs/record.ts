import { desc, eq } from 'drizzle-orm';
import {
  type ApprovalRow,
  approvals,
  type CeremonyEventRow,
  effects,
  messages,
  type NoticeRow,
  notices,
  type RecipeEventRow,
  type RunRow,
  type SignInWaitRow,
  type ToolCallRow,
  toolCalls,
} from '../db/schema.ts';
import type { Ports } from '../ports.ts';
import { eventsOf } from '../recipes/progress.ts';
import { signInActivity } from '../sign-in/activity.ts';

/** Most rows of one kind (calls, messages, approvals, effects, notices) a run's record holds: the newest ones. */
export const RUN_RECORD_ROWS = 1_000;

type MessageRow = typeof messages.$inferSelect;
type EffectRow = typeof effects.$inferSelect;

/**
 * Everything recorded about one run, each kind oldest first: the one read behind both of its
 * timelines, the agent's `GET /v1/runs/{id}/activity` (activity.ts) and the
 * owner's run page (console/runs-section.ts), so the two cannot disagree about what happened.
 * Each kind holds at most {@link RUN_RECORD_ROWS} rows (recipe events their own 1 000), the
 * newest, so a long run's page stays small.
 */
export interface RunRecord {
  readonly run: RunRow;
  readonly messages: readonly MessageRow[];
  readonly calls: readonly ToolCallRow[];
  readonly approvals: readonly ApprovalRow[];
  readonly effects: readonly EffectRow[];
  readonly signInWaits: readonly SignInWaitRow[];
  readonly ceremonyEvents: readonly CeremonyEventRow[];
  readonly notices: readonly NoticeRow[];
  readonly recipeEvents: readonly RecipeEventRow[];
}

/** Reads the record of `run` (see {@link RunRecord}); reads only, in one batch plus the sign-in and recipe reads. */
export async function runRecordOf(ports: Ports, run: RunRow): Promise<RunRecord> {
  const [signIn, recipeEvents, [messageRows, callRows, approvalRows, effectRows, noticeRows]] = await Promise.all([
    signInActivity(ports, run.id),
    eventsOf(ports, run.id),
    ports.db.batch([
      ports.db.select().from(messages).where(eq(messages.runId, run.id)).orderBy(desc(messages.createdAt)).limit(RUN_RECORD_ROWS),
      ports.db.select().from(toolCalls).where(eq(toolCalls.runId, run.id)).orderBy(desc(toolCalls.createdAt)).limit(RUN_RECORD_ROWS),
      ports.db.select().from(approvals).where(eq(approvals.runId, run.id)).orderBy(desc(approvals.createdAt)).limit(RUN_RECORD_ROWS),
      ports.db.select().from(effects).where(eq(effects.runId, run.id)).orderBy(desc(effects.committedAt)).limit(RUN_RECORD_ROWS),
      ports.db.select().from(notices).where(eq(notices.runId, run.id)).orderBy(desc(notices.createdAt)).limit(RUN_RECORD_ROWS),
    ]),
  ]);
  return {
    run,
    messages: messageRows.toReversed(),
    calls: callRows.toReversed(),
    approvals: approvalRows.toReversed(),
    effects: effectRows.toReversed(),
    signInWaits: signIn.waits,
    ceremonyEvents: signIn.events,
    notices: noticeRows.toReversed(),
    recipeEvents,
  };
}
