import type { ApprovalView, CallPhases, RunView, ToolCallView } from '../../shared/api.ts';
import { ErrorCode } from '../../shared/errors.ts';
import { Observation, OmittedObservation } from '../../shared/observation.ts';
import type { ApprovalRow, RunRow, SignInWaitRow, ToolCallRow } from '../db/schema.ts';
import { resultForVersion } from './result-version.ts';

/** ISO-8601 form of an epoch-ms timestamp. */
export const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * The API view of a run row; `wait` is its pending sign-in wait, shown while the run is
 * `waiting_for_authentication`.
 */
export function runView(row: RunRow, wait?: SignInWaitRow): RunView {
  return {
    id: row.id,
    state: row.state,
    profile_id: row.profileId,
    intent: row.intent,
    origins: row.origins,
    deadline_at: iso(row.deadlineAt),
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    latest_revision: row.latestRevision,
    summary: row.reportSummary,
    authentication:
      wait && row.state === 'waiting_for_authentication'
        ? { wait_id: wait.id, episode_id: wait.episodeId, origin: wait.origin, question: wait.question, generation: wait.generation }
        : null,
  };
}

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
    result: result?.success
      ? resultForVersion(row.version, result.data, resultBudgetBytes)
      : omitted?.success
        ? omitted.data
        : null,
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
