import { and, eq } from 'drizzle-orm';
import { isExternalWrite } from '../../shared/tools.ts';
import { type ToolCallRow, toolCalls } from '../db/schema.ts';
import type { Ports } from '../ports.ts';

/** Grace after a call's deadline before an unfinished dispatch is declared lost, in ms. */
const LOST_DISPATCH_GRACE_MS = 5_000;

/**
 * A call still `dispatching` well past its deadline was abandoned (the edge instance died
 * mid-dispatch). It ends `uncertain` (a write, whose watermark is committed) or `failed` (a read),
 * by one conditional update; never resent. A write's effect ends `uncertain` with it in that
 * statement, by the database's trigger `effects_finish_with_their_call`
 * (drizzle/0022_decision_and_outcome_triggers.sql).
 */
export async function recoverLostDispatch(ports: Ports, call: ToolCallRow, isWrite: boolean): Promise<ToolCallRow> {
  const now = ports.clock.now();
  if (call.state !== 'dispatching' || call.deadlineAt === null || now < call.deadlineAt + LOST_DISPATCH_GRACE_MS) return call;
  const state = isWrite ? ('uncertain' as const) : ('failed' as const);
  await ports.db
    .update(toolCalls)
    .set({
      state,
      errorCode: isWrite ? 'outcome_unknown' : 'deadline_exceeded',
      errorMessage: 'the dispatch was abandoned before an answer was recorded',
      retryable: !isWrite,
      updatedAt: now,
    })
    .where(and(eq(toolCalls.id, call.id), eq(toolCalls.state, 'dispatching')));
  return (await ports.db.select().from(toolCalls).where(eq(toolCalls.id, call.id)).get()) ?? call;
}

/**
 * A call as it should read now: a `dispatching` call abandoned past its deadline is settled first
 * (see {@link recoverLostDispatch}); any other call is returned as it is.
 */
export function settleIfLost(ports: Ports, call: ToolCallRow): Promise<ToolCallRow> {
  if (call.state !== 'dispatching') return Promise.resolve(call);
  return recoverLostDispatch(ports, call, isExternalWrite(call.tool, call.version));
}
