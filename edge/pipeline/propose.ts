import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import type { CallPhases, ProposeBody } from '../../shared/api.ts';
import { type ToolInvocation, toolContract } from '../../shared/tools.ts';
import type { Principal } from '../auth/principal.ts';
import { translateConstraint } from '../db/constraints.ts';
import { newId } from '../db/ids.ts';
import { approvals, effects, type RunRow, type ToolCallRow, runs, toolCalls } from '../db/schema.ts';
import { ApiError } from '../http/api-error.ts';
import type { Ports } from '../ports.ts';
import { canonicalHash } from '../policy/canonical-hash.ts';
import { decide } from '../policy/decide.ts';
import { dispatchCall } from './dispatch.ts';
import { holdRun } from './runs.ts';
import { iso } from './views.ts';

/** What proposing a call produced: a finished call (200) or one parked for the owner (202). */
export interface ProposalOutcome {
  readonly status: 200 | 202;
  readonly call: ToolCallRow;
  readonly approvalId: string | null;
}

/**
 * The tool pipeline for one proposed call (DESIGN.md section 4): validate against the pinned
 * version, check the run, decide by policy, then deny, park for approval, or dispatch exactly
 * one command and record its outcome. Every step is recorded on the call.
 * @throws ApiError('invalid_arguments') for arguments the pinned schema rejects (the rejection is
 *   stored); ApiError('stale_revision') for an act on anything but the latest revision;
 *   ApiError('policy_denied') with the deciding rule; ApiError('run_not_active' |
 *   'call_in_progress' | 'forbidden') when the run cannot take a call now.
 */
export async function proposeToolCall(ports: Ports, principal: Principal, loadedRun: RunRow, body: ProposeBody): Promise<ProposalOutcome> {
  const now = ports.clock.now();
  const argumentsHash = await canonicalHash({ tool: body.tool, version: body.version, arguments: body.arguments });
  const base = {
    runId: loadedRun.id,
    principalId: principal.id,
    tool: body.tool,
    version: body.version,
    arguments: body.arguments,
    argumentsHash,
    createdAt: now,
    updatedAt: now,
  };

  const parsed = toolContract(body.tool, body.version).arguments.safeParse(body.arguments);
  if (!parsed.success) {
    const message = z.prettifyError(parsed.error);
    await ports.db.insert(toolCalls).values({ ...base, id: newId('call'), state: 'rejected', errorCode: 'invalid_arguments', errorMessage: message, phases: {} });
    throw new ApiError('invalid_arguments', `${body.tool} ${body.version}: ${message}`);
  }
  const invocation = { tool: body.tool, version: body.version, arguments: parsed.data } as ToolInvocation;
  const run = await holdRun(ports, principal, loadedRun);

  if (invocation.tool === 'browser.act' && invocation.arguments.revision !== run.latestRevision) {
    const message =
      run.latestRevision === null
        ? 'the run has no observation yet; observe the page first'
        : `revision ${invocation.arguments.revision} is not the latest (${run.latestRevision}); observe again`;
    await ports.db.insert(toolCalls).values({ ...base, id: newId('call'), state: 'rejected', errorCode: 'stale_revision', errorMessage: message, phases: {} });
    throw new ApiError('stale_revision', message);
  }

  const decision = await decide(invocation, { origins: run.origins });
  const phases: CallPhases = { decision };
  const decided = { ...base, id: newId('call'), decisionEffect: decision.effect, decisionRule: decision.rule, policyHash: decision.policy_hash };

  if (decision.effect === 'deny') {
    await ports.db.insert(toolCalls).values({ ...decided, state: 'denied', errorCode: 'policy_denied', errorMessage: decision.reason, phases });
    throw new ApiError('policy_denied', `denied by rule ${decision.rule}: ${decision.reason}`, { tool_call_id: decided.id, rule: decision.rule });
  }

  if (decision.effect === 'approval') {
    const approvalId = newId('apr');
    const call: ToolCallRow = {
      ...decided,
      state: 'waiting_for_approval',
      result: null,
      errorCode: null,
      errorMessage: null,
      retryable: null,
      phases: { ...phases, approval: { approval_id: approvalId, decision: 'pending', at: iso(now) } },
      deadlineAt: null,
    };
    try {
      await ports.db.batch([
        ports.db.insert(toolCalls).values(call),
        ports.db.insert(approvals).values({
          id: approvalId,
          toolCallId: call.id,
          runId: run.id,
          ownerId: run.ownerId,
          state: 'pending',
          argumentsHash,
          policyHash: decision.policy_hash,
          createdAt: now,
        }),
        ports.db
          .update(runs)
          .set({ state: 'waiting_for_approval', updatedAt: now })
          .where(and(eq(runs.id, run.id), eq(runs.state, 'running'))),
      ]);
    } catch (error) {
      throw translateConstraint(error);
    }
    return { status: 202, call, approvalId };
  }

  const call = await startDispatch(ports, run, { ...decided, phases, result: null, errorCode: null, errorMessage: null, retryable: null }, invocation);
  return { status: 200, call: await dispatchCall(ports, run, call, invocation), approvalId: null };
}

/**
 * Moves a call to `dispatching` and, for an external write, commits its effect watermark in the
 * same batch, before anything is sent (DESIGN.md section 4, step 5), for a call allowed outright.
 * @throws ApiError('call_in_progress' | 'run_not_active') when the database guards refuse.
 */
export async function startDispatch(
  ports: Ports,
  run: RunRow,
  call: Omit<ToolCallRow, 'state' | 'deadlineAt'>,
  invocation: ToolInvocation,
): Promise<ToolCallRow> {
  const now = ports.clock.now();
  const isWrite = toolContract(invocation.tool, invocation.version).classification === 'external_write';
  const effectId = newId('eff');
  const row: ToolCallRow = {
    ...call,
    state: 'dispatching',
    deadlineAt: now + ports.config.toolDeadlineMs,
    phases: { ...(call.phases as CallPhases), ...(isWrite ? { watermark: { effect_id: effectId, committed_at: iso(now) } } : {}) },
    updatedAt: now,
  };
  try {
    if (isWrite) {
      await ports.db.batch([
        ports.db.insert(toolCalls).values(row),
        ports.db.insert(effects).values({ id: effectId, toolCallId: row.id, runId: run.id, state: 'committed', committedAt: now }),
      ]);
    } else {
      await ports.db.insert(toolCalls).values(row);
    }
  } catch (error) {
    throw translateConstraint(error);
  }
  return row;
}
