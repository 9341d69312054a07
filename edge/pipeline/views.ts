import { describeAct } from '../../shared/act-target.ts';
import type { ApprovalView, CallPhases, ToolCallView } from '../../shared/api.ts';
import { ErrorCode } from '../../shared/errors.ts';
import { Observation, OmittedObservation } from '../../shared/observation.ts';
import { type ActArguments, wireAction } from '../../shared/tool-arguments.ts';
import { parseInvocation, ToolName, ToolVersion } from '../../shared/tools.ts';
import type { ApprovalRow, ToolCallRow } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { resultForVersion } from './result-version.ts';

/**
 * The API view of a tool call row; `approvalId` when the call waited for the owner. The stored
 * observation is shaped for the call's pinned version and fitted into `resultBudgetBytes` (see
 * `resultForVersion`).
 */
export function toolCallView(row: ToolCallRow, approvalId: string | null, resultBudgetBytes: number): ToolCallView {
  const result = row.result === null ? null : Observation.safeParse(row.result);
  // An observation too large to store was stored as its omission marker.
  const omitted = row.result !== null && !result?.success ? OmittedObservation.safeParse(row.result) : undefined;
  const code = ErrorCode.safeParse(row.errorCode);
  return {
    id: row.id,
    run_id: row.runId,
    tool: row.tool,
    version: row.version,
    arguments: row.arguments,
    state: row.state,
    approval_id: approvalId,
    // A 1.1.0 call gets the 1.1.0 shape.
    result: result?.success ? resultForVersion(row.version, result.data, resultBudgetBytes) : omitted?.success ? omitted.data : null,
    error: code.success ? { code: code.data, message: row.errorMessage ?? '' } : null,
    retryable: row.retryable,
    phases: row.phases as CallPhases,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

/**
 * What a stored call will do, in words an owner can judge: an act through `describeAct` with its
 * bound target, a navigation by its URL, an observation as a read.
 */
export function callSummary(call: Pick<ToolCallRow, 'tool' | 'version' | 'arguments' | 'phases'>): string {
  const target = (call.phases as CallPhases).target;
  const parsed = ToolVersion.safeParse(call.version);
  const tool = ToolName.safeParse(call.tool);
  const invocation = parsed.success && tool.success ? parseInvocation(tool.data, parsed.data, call.arguments) : undefined;
  if (!invocation?.success) return `${call.tool} with arguments the pipeline rejected`;
  const { invocation: valid } = invocation;
  switch (valid.tool) {
    case 'browser.act':
      return target === undefined
        ? unboundAct(valid.arguments)
        : describeAct(wireAction(valid.arguments, { reference: target.reference, to_reference: target.destination?.reference }), target);
    case 'browser.navigate': {
      if ('url' in valid.arguments) return `Open ${valid.arguments.url}`;
      // A history move names the entry it was decided on (edge/pipeline/history.ts).
      const landing = (call.phases as CallPhases).history?.url;
      if (valid.arguments.history === 'reload') return landing === undefined ? 'Reload the page' : `Reload ${landing}`;
      const move = `Go ${valid.arguments.history} in the tab's history`;
      return landing === undefined ? move : `${move} to ${landing}`;
    }
    case 'browser.observe':
      return 'Read the page';
  }
}

/**
 * An act never bound to a target (refused before any decision), by the elements it named:
 * `click on e2`, `drag on a point to e10`, `fill_form of e2, e3 then e7`.
 */
function unboundAct(args: ActArguments): string {
  if (args.action === 'fill_form') {
    const submit = args.submit_reference ?? args.submit_key;
    return `fill_form of ${args.fields.map((field) => field.reference).join(', ')}${submit === undefined ? '' : ` then ${submit}`}`;
  }
  const on = 'reference' in args && args.reference !== undefined ? args.reference : 'a point';
  if (args.action !== 'drag') return `${args.action} on ${on}`;
  return `${args.action} on ${on} to ${args.to_reference ?? 'a point'}`;
}

/** The API view of an approval, with the exact call it covers. */
export function approvalView(row: ApprovalRow, call: ToolCallRow): ApprovalView {
  return {
    id: row.id,
    tool_call_id: row.toolCallId,
    run_id: row.runId,
    state: row.state,
    tool: call.tool,
    version: call.version,
    arguments: call.arguments,
    arguments_hash: row.argumentsHash,
    policy_hash: row.policyHash,
    summary: callSummary(call),
    target: (call.phases as CallPhases).target ?? null,
    created_at: iso(row.createdAt),
    decided_at: row.decidedAt === null ? null : iso(row.decidedAt),
  };
}
