import { eq } from 'drizzle-orm';
import { FINISHED_CALL_STATES } from '../../shared/api.ts';
import type { Principal } from '../auth/principal.ts';
import { approvals, runs, type ToolCallRow, toolCalls } from '../db/schema.ts';
import { Deadline } from '../deadline.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { settleIfLost } from './lost-dispatch.ts';

/** Spacing of the database reads of a long-poll, in ms. */
const POLL_SPACING_MS = 250;

/**
 * Reads a call the caller may see, waiting up to `waitMs` (0-30,000 ms) for it to finish. A call
 * abandoned mid-dispatch is settled on the way (see `recoverLostDispatch`).
 * @returns the call row and the id of its approval, if it had one.
 * @throws DomainError('not_found') for an unknown call or another owner's.
 */
export async function readToolCall(
  ports: Ports,
  principal: Principal,
  callId: string,
  waitMs: number,
): Promise<{ call: ToolCallRow; approvalId: string | null }> {
  const first = await ports.db.select().from(toolCalls).where(eq(toolCalls.id, callId)).get();
  if (!first) throw new DomainError('not_found', `no tool call ${callId}`);
  const run = await ports.db.select({ ownerId: runs.ownerId }).from(runs).where(eq(runs.id, first.runId)).get();
  if (!run || run.ownerId !== principal.ownerId) throw new DomainError('not_found', `no tool call ${callId}`);

  const deadline = Deadline.after(ports.clock, waitMs);
  let call = await settleIfLost(ports, first);
  while (!FINISHED_CALL_STATES.includes(call.state) && !deadline.passed()) {
    await ports.clock.sleep(deadline.upTo(POLL_SPACING_MS));
    call = await settleIfLost(ports, (await ports.db.select().from(toolCalls).where(eq(toolCalls.id, callId)).get()) ?? call);
  }
  const approval = await ports.db.select({ id: approvals.id }).from(approvals).where(eq(approvals.toolCallId, call.id)).get();
  return { call, approvalId: approval?.id ?? null };
}
