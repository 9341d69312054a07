import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import type { CallPhases } from '../../shared/api.ts';
import { parseInvocation, type ToolInvocation, ToolName, ToolVersion } from '../../shared/tools.ts';
import type { Principal } from '../auth/principal.ts';
import { changedItsRow } from '../db/rows-changed.ts';
import { type ApprovalRow, approvals, policyProfiles, runs, type ToolCallRow, toolCalls } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import { dialEarly } from '../fleet/early-connection.ts';
import { canonicalHash } from '../policy/canonical-hash.ts';
import { approvalStance, decideForRun } from '../policy/decision-input.ts';
import type { Ports } from '../ports.ts';
import { kickRecipeRuns } from '../recipes/scheduling.ts';
import { expireIfPastDeadline } from '../runs/lifecycle.ts';
import { beginDispatch } from './begin-dispatch.ts';
import { dispatchCall } from './dispatch.ts';
import { policyInvocation } from './history.ts';

/** Most approvals one listing returns. */
const APPROVAL_PAGE = 100;

/** The owner's approvals across runs, newest first, optionally of one state. */
export async function listApprovals(
  ports: Ports,
  principal: Principal,
  state?: ApprovalRow['state'],
): Promise<Array<{ approval: ApprovalRow; call: ToolCallRow }>> {
  const where = state ? and(eq(approvals.ownerId, principal.ownerId), eq(approvals.state, state)) : eq(approvals.ownerId, principal.ownerId);
  const rows = await ports.db.select().from(approvals).where(where).orderBy(desc(approvals.createdAt)).limit(APPROVAL_PAGE);
  if (rows.length === 0) return [];
  const calls = await ports.db
    .select()
    .from(toolCalls)
    .where(
      inArray(
        toolCalls.id,
        rows.map((row) => row.toolCallId),
      ),
    );
  const byId = new Map(calls.map((call) => [call.id, call]));
  return rows.flatMap((approval) => {
    const call = byId.get(approval.toolCallId);
    return call ? [{ approval, call }] : [];
  });
}

/**
 * The owner decides a pending approval once. Approve: the approval is revalidated against the
 * exact arguments hash and the current policy hash, then one batch moves approval and call (the
 * run resumes by trigger) and commits the effect watermark; only the request whose batch wins
 * dispatches, so an approved call dispatches exactly once. Deny: the call ends `denied` with a
 * result the agent can read, and the run resumes the same way.
 * Then, when the run is bound to a reviewed recipe, its runner is kicked to go on (issue 19,
 * edge/recipes/scheduling.ts `kickRecipeRuns`), after `beforeResume`: what must land before the
 * run goes on (the console's "approve and allow the same" grant), given the decided approval.
 * @throws DomainError('not_found') for an unknown approval or another owner's;
 *   DomainError('already_decided') when it is no longer pending; DomainError('run_not_active') when the
 *   run passed its deadline or was cancelled.
 */
export async function decideApproval(
  ports: Ports,
  principal: Principal,
  approvalId: string,
  decision: 'approve' | 'deny',
  beforeResume?: (decided: DecidedApproval) => Promise<void>,
): Promise<DecidedApproval> {
  const decided = await decide(ports, principal, approvalId, decision);
  if (beforeResume) await beforeResume(decided);
  if (decided.recipeBound) await kickRecipeRuns(ports, [decided.call.runId]);
  return decided;
}

/** A decided approval and its call after dispatch (or denial); `recipeBound` when a reviewed recipe drives the run. */
export type DecidedApproval = { approval: ApprovalRow; call: ToolCallRow; recipeBound: boolean };

/** {@link decideApproval} without the recipe kick. */
async function decide(ports: Ports, principal: Principal, approvalId: string, decision: 'approve' | 'deny'): Promise<DecidedApproval> {
  // The approval, its call, its run and the run's policy profile in force, in one statement.
  const joined = await ports.db
    .select({
      approval: approvals,
      call: toolCalls,
      run: runs,
      policy: policyProfiles,
    })
    .from(approvals)
    .leftJoin(toolCalls, eq(toolCalls.id, approvals.toolCallId))
    .leftJoin(runs, eq(runs.id, approvals.runId))
    .leftJoin(
      policyProfiles,
      sql`"policy_profiles"."id" = (select p.id from policy_profiles p where p.name = "runs"."policy_profile" order by p.version desc limit 1)`,
    )
    .where(eq(approvals.id, approvalId))
    .get();
  const approval = joined?.approval;
  if (!approval || approval.ownerId !== principal.ownerId) throw new DomainError('not_found', `no approval ${approvalId}`);
  if (approval.state !== 'pending') throw new DomainError('already_decided', `the approval is already ${approval.state}`);
  const call = joined.call;
  const loadedRun = joined.run;
  if (!call || !loadedRun) throw new DomainError('not_found', `the call of approval ${approvalId} is gone`);
  const run = await expireIfPastDeadline(ports, loadedRun);
  if (run.state !== 'waiting_for_approval') throw new DomainError('run_not_active', `the run is ${run.state}`);

  const now = ports.clock.now();
  const phases = (call.phases ?? {}) as CallPhases;
  // A recipe-bound run's runner goes on once the call is decided (issue 19).
  const recipeBound = run.recipeId !== null;
  if (decision === 'deny') {
    return { ...(await settleDenied(ports, principal, approval, call, phases, now, 'the owner denied this call')), recipeBound };
  }

  const invocation = revalidatedInvocation(call, approval, await canonicalHash({ tool: call.tool, version: call.version, arguments: call.arguments }));
  // Revalidate under the policy in force now (DESIGN.md section 5): an approval made under an
  // older profile hash is never silently carried over.
  // A history move is decided again as the navigation to the entry it was asked about (edge/pipeline/history.ts).
  const forPolicy = policyInvocation(invocation, call.arguments, phases.history);
  const current = await decideForRun(ports.db, run, forPolicy.invocation, forPolicy.proposed, approvalStance(invocation, phases.decision), phases.target, {
    // The profile's newest version, read with the approval.
    stored: joined.policy ?? undefined,
  });
  if (current.effect === 'deny') {
    const denied = await settleDenied(
      ports,
      principal,
      approval,
      call,
      { ...phases, decision: current },
      now,
      `the policy changed and now denies this call: ${current.reason}`,
    );
    return { ...denied, recipeBound };
  }

  const approved = {
    ...call,
    policyHash: current.policy_hash,
    phases: {
      ...phases,
      decision: current.policy_hash === approval.policyHash ? phases.decision : current,
      approval: { approval_id: approval.id, decision: 'approved' as const, at: iso(now) },
    },
  };
  // The host's connection opens while the approval is recorded; nothing is sent on it before.
  const early = dialEarly(ports, run);
  let finished: ToolCallRow;
  try {
    const started = await beginDispatch(ports, run, approved, invocation, { by: 'approval', approval, owner: principal, policyHash: current.policy_hash });
    finished = await dispatchCall(ports, { ...run, state: 'running' }, started, invocation, early);
  } finally {
    early?.discard();
  }
  // beginDispatch moved it from pending to approved, or threw.
  return {
    approval: { ...approval, state: 'approved', decidedBy: principal.id, decidedAt: now, policyHash: current.policy_hash },
    call: finished,
    recipeBound,
  };
}

/** Re-parses the stored call and checks it still hashes to what the owner was asked about. */
function revalidatedInvocation(call: ToolCallRow, approval: ApprovalRow, argumentsHash: string): ToolInvocation {
  const tool = ToolName.safeParse(call.tool);
  const version = ToolVersion.safeParse(call.version);
  if (!tool.success || !version.success || argumentsHash !== approval.argumentsHash) {
    throw new DomainError('already_decided', 'the call no longer matches what was approved');
  }
  const parsed = parseInvocation(tool.data, version.data, call.arguments);
  if (!parsed.success) throw new DomainError('already_decided', 'the stored arguments no longer validate');
  return parsed.invocation;
}

/**
 * Denies a pending approval and its parked call in one batch of conditional updates, so only one
 * decision can win; the run goes from waiting to running in the approval's statement, by the
 * database's trigger `runs_resume_when_approval_decided` (drizzle/0022_decision_and_outcome_triggers.sql).
 * @throws DomainError('already_decided') when the approval was decided concurrently.
 */
async function settleDenied(
  ports: Ports,
  principal: Principal,
  approval: ApprovalRow,
  call: ToolCallRow,
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
  ]);
  if (!changedItsRow(changed)) throw new DomainError('already_decided', 'the approval was decided concurrently');
  return { approval: { ...approval, state: 'denied', decidedBy: principal.id, decidedAt: now }, call: { ...call, ...denied } as ToolCallRow };
}
