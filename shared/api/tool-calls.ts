import { z } from 'zod';
import { ActTarget } from '../act-target.ts';
import { ErrorDetail } from '../errors.ts';
import { BlockedRequest, PageDialog, SettleReport, ToolResult } from '../observation.ts';
import { PolicyEffect } from '../policy.ts';
import { ConditionStatus } from '../predicate.ts';
import { HistoryMove } from '../tool-arguments.ts';
import { ToolName, ToolVersion } from '../tools.ts';

// Proposed tool calls and their approval states: the body, the states, the decision and phase
// records, the view and the long-poll.
// Part of the agent-facing HTTP API v1: shared/api.ts re-exports every resource's file.

/** Deepest nesting of objects and arrays a proposal's arguments may have. */
export const MAX_ARGUMENT_DEPTH = 16;

function depthOf(value: unknown, limit: number): number {
  if (value === null || typeof value !== 'object') return 0;
  if (limit <= 0) return 1;
  let deepest = 0;
  for (const inner of Object.values(value as Record<string, unknown>)) deepest = Math.max(deepest, depthOf(inner, limit - 1));
  return deepest + 1;
}

/** A proposed tool call; `arguments` is validated against the pinned tool version's schema. */
export const ProposeBody = z
  .strictObject({
    tool: ToolName,
    version: ToolVersion,
    arguments: z
      .record(z.string(), z.unknown())
      .refine((args) => depthOf(args, MAX_ARGUMENT_DEPTH + 1) <= MAX_ARGUMENT_DEPTH, `nested at most ${MAX_ARGUMENT_DEPTH} levels deep`),
  })
  .meta({ examples: [{ tool: 'browser.navigate', version: '1.2.0', arguments: { url: 'http://127.0.0.1:8080/' } }] });

export type ProposeBody = z.infer<typeof ProposeBody>;

export const ToolCallState = z.enum(['rejected', 'denied', 'waiting_for_approval', 'dispatching', 'succeeded', 'failed', 'uncertain', 'cancelled']);

export type ToolCallState = z.infer<typeof ToolCallState>;

/** Tool call states that never change again. */
export const FINISHED_CALL_STATES: readonly ToolCallState[] = ['rejected', 'denied', 'succeeded', 'failed', 'uncertain', 'cancelled'];

/** The decision phase: the effect, the rule that decided it and the policy profile's hash. */
export const DecisionRecord = z.strictObject({
  effect: PolicyEffect,
  rule: z.string(),
  reason: z.string(),
  policy_hash: z.string(),
  profile_version: z.int().optional(),
  /** Where the turn's authority came from: the owner's message, the owner's schedule, or none. */
  authority: z.enum(['user', 'trusted_configuration', 'none']).optional(),
  /** The turn had received page-derived results when this was decided. */
  tainted: z.boolean().optional(),
  /** Set when an overlay changed the rule's effect. */
  overlay: z.literal('external_untrusted').optional(),
  /** Set when a grant covered the call instead of an approval. */
  grant_id: z.string().optional(),
});

export type DecisionRecord = z.infer<typeof DecisionRecord>;

/** States of an approval: pending until the owner decides; cancelled when its run is fenced. */
export const ApprovalState = z.enum(['pending', 'approved', 'denied', 'cancelled']);

export type ApprovalState = z.infer<typeof ApprovalState>;

/** Phase metadata of a call, as recorded in D1. Times are ISO-8601; durations in ms. */
export const CallPhases = z.strictObject({
  decision: DecisionRecord.optional(),
  approval: z.strictObject({ approval_id: z.string(), decision: ApprovalState, at: z.string() }).optional(),
  watermark: z.strictObject({ effect_id: z.string(), committed_at: z.string() }).optional(),
  dispatch: z
    .strictObject({
      started_at: z.string(),
      finished_at: z.string().optional(),
      elapsed_ms: z.int().min(0).optional(),
      lease_generation: z.int().optional(),
      /** The browser host the call was sent to (its registry id, `GET /v1/hosts`; issue 32). */
      host_id: z.string().optional(),
      outcome: z.enum(['answered', 'host_error', 'not_sent', 'connection_lost', 'deadline_exceeded']).optional(),
    })
    .optional(),
  settle: SettleReport.optional(),
  postcondition: z.strictObject({ status: ConditionStatus, observations: z.int().min(1), elapsed_ms: z.int().min(0) }).optional(),
  /** An act's target as the observation showed it; checked by the host right before the input. */
  target: ActTarget.optional(),
  /**
   * 1.5.0: the entry a history move lands on, as the host reported it before the decision: what
   * policy decided on (as a navigation to `url`) and what the host must still find to move.
   */
  history: z.strictObject({ move: HistoryMove, url: z.string().max(4096) }).optional(),
  /** What the host's confinement blocked and which dialogs it answered, as the observation reported them. */
  blocked: z.array(BlockedRequest).optional(),
  dialogs: z.array(PageDialog).optional(),
});

export type CallPhases = z.infer<typeof CallPhases>;

export const ToolCallView = z.strictObject({
  id: z.string(),
  run_id: z.string(),
  tool: z.string(),
  version: z.string(),
  arguments: z.unknown(),
  state: ToolCallState,
  approval_id: z.string().nullable(),
  /**
   * The observation in the shape of the call's pinned version (1.1.0 has no settle report and no
   * condition), or an explicit marker when it did not fit the result budget.
   */
  result: ToolResult.nullable(),
  error: ErrorDetail.nullable(),
  /** False for every call whose effect may have happened; such a call is never retried. */
  retryable: z.boolean().nullable(),
  phases: CallPhases,
  created_at: z.string(),
  updated_at: z.string(),
});

export type ToolCallView = z.infer<typeof ToolCallView>;

/** Longest a `GET /v1/tool-calls/{id}?wait_ms=` long-poll may wait, in ms. */
export const MAX_WAIT_MS = 30_000;

export const WaitQuery = z.strictObject({
  wait_ms: z
    .string()
    .regex(/^[0-9]{1,5}$/, 'an integer number of ms, 0-30000')
    .transform(Number)
    .pipe(z.int().min(0).max(MAX_WAIT_MS))
    .optional()
    .meta({ examples: ['1000'] }),
});
