import { and, eq, sql } from 'drizzle-orm';
import type { CallPhases } from '../../shared/api.ts';
import { callTraits, type ToolInvocation } from '../../shared/tools.ts';
import type { Principal } from '../auth/principal.ts';
import { translateConstraint } from '../db/constraints.ts';
import { newId } from '../db/ids.ts';
import { changedItsRow } from '../db/rows-changed.ts';
import { type ApprovalRow, approvals, effects, type GrantRow, grants, grantUses, type RunRow, type ToolCallRow, toolCalls } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';

/** A call not yet stored: what the proposal knows before it picks the call's state. */
export type NewCall = Omit<ToolCallRow, 'state' | 'deadlineAt' | 'result' | 'shownUrls' | 'ownUrls' | 'errorCode' | 'errorMessage' | 'retryable'>;

/** Why a call may be dispatched: policy allowed it, a grant covers it, or the owner approved it. */
export type DispatchWarrant =
  | { readonly by: 'policy' }
  | { readonly by: 'grant'; readonly grant: GrantRow }
  | { readonly by: 'approval'; readonly approval: ApprovalRow; readonly owner: Principal; readonly policyHash: string };

/**
 * Moves a call to `dispatching` in one batch, before anything is sent (DESIGN.md section 4,
 * steps 4-5), for both ways a call gets there: a new call (allowed by policy, or covered by a
 * grant, which is charged exactly one use in the same batch, whatever the outcome later) is
 * inserted; a parked call the owner approved is moved by conditional updates of the approval
 * (pending to approved) and the call (waiting to dispatching), so only one decision can win; the
 * run goes from waiting to running in the approval's statement, by the database's trigger
 * `runs_resume_when_approval_decided` (drizzle/0022_decision_and_outcome_triggers.sql). For an
 * external write the effect watermark is committed in the same batch; the database refuses it
 * unless this batch moved the call. The call's deadline starts now (`toolDeadlineMs`).
 * @param call the new call (`phases` holding its decision), or the parked call with the phases
 *   it should have once approved.
 * @returns the call row as it now stands in the database.
 * @throws DomainError('call_in_progress' | 'run_not_active') when the database guards refuse;
 *   DomainError('already_decided') when the grant can no longer be charged or the approval was
 *   decided concurrently.
 */
export async function beginDispatch(ports: Ports, run: RunRow, call: NewCall, invocation: ToolInvocation, warrant: DispatchWarrant): Promise<ToolCallRow> {
  const now = ports.clock.now();
  const { isWrite } = callTraits(invocation);
  const effectId = newId('eff');
  const row: ToolCallRow = {
    ...call,
    state: 'dispatching',
    result: null,
    shownUrls: null,
    ownUrls: null,
    errorCode: null,
    errorMessage: null,
    retryable: null,
    deadlineAt: now + ports.config.toolDeadlineMs,
    phases: { ...(call.phases as CallPhases), ...(isWrite ? { watermark: { effect_id: effectId, committed_at: iso(now) } } : {}) },
    updatedAt: now,
  };
  const watermark = isWrite ? [ports.db.insert(effects).values({ id: effectId, toolCallId: row.id, runId: run.id, state: 'committed', committedAt: now })] : [];
  const moves =
    warrant.by === 'approval'
      ? [
          ports.db
            .update(approvals)
            .set({ state: 'approved', decidedBy: warrant.owner.id, decidedAt: now, policyHash: warrant.policyHash })
            .where(and(eq(approvals.id, warrant.approval.id), eq(approvals.state, 'pending'))),
          ports.db
            .update(toolCalls)
            .set({ state: row.state, deadlineAt: row.deadlineAt, policyHash: row.policyHash, phases: row.phases, updatedAt: now })
            .where(and(eq(toolCalls.id, row.id), eq(toolCalls.state, 'waiting_for_approval'))),
        ]
      : [
          ports.db.insert(toolCalls).values(row),
          ...(warrant.by === 'grant'
            ? [
                ports.db.insert(grantUses).values({ toolCallId: row.id, grantId: warrant.grant.id, chargedAt: now }),
                ports.db
                  .update(grants)
                  .set({ uses: sql`${grants.uses} + 1` })
                  .where(eq(grants.id, warrant.grant.id)),
              ]
            : []),
        ];
  let results: readonly unknown[];
  try {
    results = await ports.db.batch([...moves, ...watermark] as unknown as Parameters<typeof ports.db.batch>[0]);
  } catch (error) {
    throw translateConstraint(error);
  }
  if (warrant.by === 'approval' && !changedItsRow(results[0] as Parameters<typeof changedItsRow>[0])) {
    throw new DomainError('already_decided', 'the approval was decided concurrently');
  }
  return row;
}
