import { and, desc, eq, inArray } from 'drizzle-orm';
import type { CallPhases } from '../../shared/api.ts';
import { type ToolInvocation, ToolName, ToolVersion, toolContract } from '../../shared/tools.ts';
import type { Principal } from '../auth/principal.ts';
import { translateConstraint } from '../db/constraints.ts';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type ApprovalRow, approvals, effects, type RunRow, runs, type ToolCallRow, toolCalls } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import { canonicalHash } from '../policy/canonical-hash.ts';
import { decide, originOf } from '../policy/decide.ts';
import { profileInForce } from '../policy/profile.ts';
import type { Ports, RunResult } from '../ports.ts';
import { expireIfPastDeadline } from '../runs/lifecycle.ts';
import { dispatchCall } from './dispatch.ts';

/** Most approvals one listing returns. */
const APPROVAL_PAGE = 100;

/** The owner's approvals across runs, newest first, optionally of one state. */
export async function listApprovals(ports: Ports, principal: Principal, state?: ApprovalRow['state']): Promise<Array<{ approval: ApprovalRow; call: ToolCallRow }>> {
  const where = state ? and(eq(approvals.ownerId, principal.ownerId), eq(approvals.state, state)) : eq(approvals.ownerId, principal.ownerId);
  const rows = await ports.db.select().from(approvals).where(where).orderBy(desc(approvals.createdAt)).limit(APPROVAL_PAGE);
  if (rows.length === 0) return [];
  const calls = await ports.db
    .select()
    .from(toolCalls)
    .where(inArray(toolCalls.id, rows.map((row) => row.toolCallId)));
  const byId = new Map(calls.map((call) => [call.id, call]));
  return rows.flatMap((approval) => {
    const call = byId.get(approval.toolCallId);
    return call ? [{ approval, call }] : [];
  });
}

/**
 * The owner decides a pending approval once. Approve: the approval is revalidated against the
 * exact arguments hash and the current policy hash, then one batch moves approval, call and run
 * and commits the effect watermark; only the request whose batch wins dispatches, so an approved
 * call dispatches exactly once. Deny: the call ends `denied` with a result the agent can read.
 * @throws DomainError('not_found') for an unknown approval or another owner's;
 *   DomainError('already_decided') when it is no longer pending; DomainError('run_not_active') when the
 *   run passed its deadline or was cancelled.
 */
export async function decideApproval(
  ports: Ports,
  principal: Principal,
  approvalId: string,
  decision: 'approve' | 'deny',
): Promise<{ approval: ApprovalRow; call: ToolCallRow }> {
  const approval = await ports.db.select().from(approvals).where(eq(approvals.id, approvalId)).get();
  if (!approval || approval.ownerId !== principal.ownerId) throw new DomainError('not_found', `no approval ${approvalId}`);
  if (approval.state !== 'pending') throw new DomainError('already_decided', `the approval is already ${approval.state}`);
  const call = await ports.db.select().from(toolCalls).where(eq(toolCalls.id, approval.toolCallId)).get();
  const loadedRun = await ports.db.select().from(runs).where(eq(runs.id, approval.runId)).get();
  if (!call || !loadedRun) throw new DomainError('not_found', `the call of approval ${approvalId} is gone`);
  const run = await expireIfPastDeadline(ports, loadedRun);
  if (run.state !== 'waiting_for_approval') throw new DomainError('run_not_active', `the run is ${run.state}`);

  const now = ports.clock.now();
  const phases = (call.phases ?? {}) as CallPhases;
  if (decision === 'deny') {
    return settleDenied(ports, principal, approval, call, run, phases, now, 'the owner denied this call');
  }

  const invocation = revalidatedInvocation(call, approval, await canonicalHash({ tool: call.tool, version: call.version, arguments: call.arguments }));
  // Revalidate under the policy in force now (DESIGN.md section 5): an approval made under an
  // older profile hash is never silently carried over. The owner approving is user authority.
  const previous = phases.decision;
  const profile = await profileInForce(ports.db, run.policyProfile);
  const current = decide(
    {
      invocation,
      proposed: call.arguments,
      runOrigins: run.origins,
      pageOrigin: run.latestUrl === null ? undefined : originOf(run.latestUrl),
      authority: 'user',
      tainted: previous?.tainted ?? true,
      pageDerived: invocation.tool === 'browser.act' || previous?.overlay === 'external_untrusted',
    },
    profile,
  );
  if (current.effect === 'deny') {
    return settleDenied(ports, principal, approval, call, run, { ...phases, decision: current }, now, `the policy changed and now denies this call: ${current.reason}`);
  }

  const isWrite = toolContract(invocation.tool, invocation.version).classification === 'external_write';
  const effectId = newId('eff');
  const dispatching: Partial<ToolCallRow> = {
    state: 'dispatching',
    deadlineAt: now + ports.config.toolDeadlineMs,
    policyHash: current.policy_hash,
    phases: {
      ...phases,
      decision: current.policy_hash === approval.policyHash ? phases.decision : current,
      approval: { approval_id: approval.id, decision: 'approved', at: iso(now) },
      ...(isWrite ? { watermark: { effect_id: effectId, committed_at: iso(now) } } : {}),
    },
    updatedAt: now,
  };
  let approved: RunResult;
  try {
    [approved] = await ports.db.batch([
      ports.db
        .update(approvals)
        .set({ state: 'approved', decidedBy: principal.id, decidedAt: now, policyHash: current.policy_hash })
        .where(and(eq(approvals.id, approval.id), eq(approvals.state, 'pending'))),
      ports.db
        .update(toolCalls)
        .set(dispatching)
        .where(and(eq(toolCalls.id, call.id), eq(toolCalls.state, 'waiting_for_approval'))),
      ports.db
        .update(runs)
        .set({ state: 'running', updatedAt: now })
        .where(and(eq(runs.id, run.id), eq(runs.state, 'waiting_for_approval'))),
      // The watermark insert is refused by a trigger unless the update above moved this call.
      ...(isWrite ? [ports.db.insert(effects).values({ id: effectId, toolCallId: call.id, runId: run.id, state: 'committed', committedAt: now })] : []),
    ] as unknown as Parameters<typeof ports.db.batch>[0]) as unknown as [RunResult];
  } catch (error) {
    throw translateConstraint(error);
  }
  if (rowsChanged(approved) !== 1) throw new DomainError('already_decided', 'the approval was decided concurrently');

  const startedCall = { ...call, ...dispatching } as ToolCallRow;
  const finished = await dispatchCall(ports, { ...run, state: 'running' }, startedCall, invocation);
  const approvalAfter = (await ports.db.select().from(approvals).where(eq(approvals.id, approval.id)).get()) ?? approval;
  return { approval: approvalAfter, call: finished };
}

/** Re-parses the stored call and checks it still hashes to what the owner was asked about. */
function revalidatedInvocation(call: ToolCallRow, approval: ApprovalRow, argumentsHash: string): ToolInvocation {
  const tool = ToolName.safeParse(call.tool);
  const version = ToolVersion.safeParse(call.version);
  if (!tool.success || !version.success || argumentsHash !== approval.argumentsHash) {
    throw new DomainError('already_decided', 'the call no longer matches what was approved');
  }
  const parsed = toolContract(tool.data, version.data).arguments.safeParse(call.arguments);
  if (!parsed.success) throw new DomainError('already_decided', 'the stored arguments no longer validate');
  return { tool: tool.data, version: version.data, arguments: parsed.data } as ToolInvocation;
}

async function settleDenied(
  ports: Ports,
  principal: Principal,
  approval: ApprovalRow,
  call: ToolCallRow,
  run: RunRow,
  phases: CallPhases,
  now: number,
  message: string,
): Promise<{ approval: ApprovalRow; call: ToolCallRow }> {
  const denied: Partial<ToolCallRow> = {
    state: 'denied',
    errorCode: 'policy_denied',
    errorMessage: message,
    retryable: false,
    phases: { ...phases, approval: { approval_id: approval.id, decision: 'denied', at: iso(now) } },
    updatedAt: now,
  };
  const [changed] = await ports.db.batch([
    ports.db
      .update(approvals)
      .set({ state: 'denied', decidedBy: principal.id, decidedAt: now })
      .where(and(eq(approvals.id, approval.id), eq(approvals.state, 'pending'))),
    ports.db
      .update(toolCalls)
      .set(denied)
      .where(and(eq(toolCalls.id, call.id), eq(toolCalls.state, 'waiting_for_approval'))),
    ports.db
      .update(runs)
      .set({ state: 'running', updatedAt: now })
      .where(and(eq(runs.id, run.id), eq(runs.state, 'waiting_for_approval'))),
  ]);
  if (rowsChanged(changed) !== 1) throw new DomainError('already_decided', 'the approval was decided concurrently');
  return { approval: { ...approval, state: 'denied', decidedBy: principal.id, decidedAt: now }, call: { ...call, ...denied } as ToolCallRow };
}
