import type { ApprovalView, CallPhases, ToolCallView } from '../../shared/api.ts';
import { ErrorCode } from '../../shared/errors.ts';
import { Observation, OmittedObservation } from '../../shared/observation.ts';
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
    created_at: iso(row.createdAt),
    decided_at: row.decidedAt === null ? null : iso(row.decidedAt),
  };
}
