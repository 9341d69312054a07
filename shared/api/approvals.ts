import { z } from 'zod';
import { ActTarget } from '../act-target.ts';
import { ApprovalState, ToolCallView } from './tool-calls.ts';

// Approvals: the owner's decision on a parked call.
// Part of the agent-facing HTTP API v1: shared/api.ts re-exports every resource's file.

export const ApprovalView = z.strictObject({
  id: z.string(),
  tool_call_id: z.string(),
  run_id: z.string(),
  state: ApprovalState,
  tool: z.string(),
  version: z.string(),
  arguments: z.unknown(),
  arguments_hash: z.string(),
  policy_hash: z.string(),
  /** What the call will do, in words (shared/act-target.ts `describeAct`; navigations name the URL). */
  summary: z.string(),
  /** An act's target as the observation showed it; null for other tools. */
  target: ActTarget.nullable(),
  created_at: z.string(),
  decided_at: z.string().nullable(),
});

export type ApprovalView = z.infer<typeof ApprovalView>;

export const ApprovalList = z.strictObject({ approvals: z.array(ApprovalView) });

export const DecisionBody = z.strictObject({ decision: z.enum(['approve', 'deny']) }).meta({ examples: [{ decision: 'approve' }] });

export type DecisionBody = z.infer<typeof DecisionBody>;

export const DecisionResponse = z.strictObject({ approval: ApprovalView, tool_call: ToolCallView });

export const ApprovalsQuery = z.strictObject({ state: ApprovalState.optional().meta({ examples: ['pending'] }) });
