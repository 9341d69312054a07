import { z } from 'zod';
import { ActTarget } from './act-target.ts';
import { SignInReason } from './authentication.ts';
import { ErrorDetail } from './errors.ts';
import { BlockedRequest, PageDialog, SettleReport, ToolResult } from './observation.ts';
import { Origin } from './origin.ts';
import { PolicyEffect } from './policy.ts';
import { ConditionStatus } from './predicate.ts';
import { MessageFields, RecipeBinding } from './recipes.ts';
import { ActionKind } from './tool-arguments.ts';
import { ToolName, ToolVersion } from './tools.ts';

/**
 * Request and response bodies of the agent-facing HTTP API v1 (DESIGN.md section 13). The edge's
 * route validators, the OpenAPI document and the clients (demo agent, tests) all use these.
 */

/** Longest run deadline, in ms (one hour). */
export const MAX_RUN_DEADLINE_MS = 3_600_000;
/** Default run deadline, in ms (five minutes). */
export const DEFAULT_RUN_DEADLINE_MS = 300_000;

/**
 * A run's browser profile, named by its owner (at most 48 characters). The host keeps it apart
 * from every other owner's profile of the same name (see edge/profiles/bindings.ts).
 */
export const RunProfileId = z.string().regex(/^[A-Za-z0-9_-]{1,48}$/, 'letters, digits, _ and -, at most 48');

export const CreateRunBody = z
  .strictObject({
    profile_id: RunProfileId,
    intent: z.string().min(1).max(2000),
    origins: z.array(Origin).min(1).max(16),
    deadline_ms: z.int().min(1_000).max(MAX_RUN_DEADLINE_MS).optional(),
    /**
     * Named values of the owner's message (shared/recipes.ts `MessageFields`) that a reviewed
     * recipe may type, e.g. `{"title": "Week 49"}`. Only an owner's message carries them.
     */
    fields: MessageFields.optional(),
  })
  .meta({
    examples: [{ profile_id: 'me', intent: 'Add "Buy oat milk" to my todo list', origins: ['http://127.0.0.1:8080'], deadline_ms: 300_000 }],
  });
export type CreateRunBody = z.infer<typeof CreateRunBody>;

export const RunState = z.enum([
  'queued',
  'running',
  'waiting_for_approval',
  'waiting_for_authentication',
  'completed',
  'partial',
  'uncertain',
  'cancelled',
  'failed',
  'deadline_exceeded',
]);
export type RunState = z.infer<typeof RunState>;

/** Run states after which nothing more happens on the run. */
export const TERMINAL_RUN_STATES: readonly RunState[] = ['completed', 'partial', 'uncertain', 'cancelled', 'failed', 'deadline_exceeded'];

/** Run states in which a run may still change: every state but the terminal ones. */
export const ACTIVE_RUN_STATES = ['queued', 'running', 'waiting_for_approval', 'waiting_for_authentication'] as const satisfies readonly RunState[];

export const RunView = z.strictObject({
  id: z.string(),
  state: RunState,
  profile_id: z.string(),
  intent: z.string(),
  origins: z.array(z.string()),
  /** ISO-8601 instants. */
  deadline_at: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  latest_revision: z.int().nullable(),
  summary: z.string().nullable(),
  /** While `waiting_for_authentication`: the wait, its episode and what the owner is asked. */
  authentication: z
    .strictObject({
      wait_id: z.string(),
      episode_id: z.string(),
      origin: z.string(),
      question: z.string(),
      generation: z.int().min(1),
      /** Why the page was taken for a sign-in wall (issue 17): the evidence the host saw. */
      reasons: z.array(SignInReason),
    })
    .nullable(),
  /** The reviewed recipe the run is bound to (its id, version and hash), or null for the ordinary agent path. */
  recipe: RecipeBinding.nullable(),
});
export type RunView = z.infer<typeof RunView>;

/** States of a sign-in episode (DESIGN.md section 8). */
export const SignInEpisodeState = z.enum(['open', 'resolved', 'abandoned', 'revoked']);
export type SignInEpisodeState = z.infer<typeof SignInEpisodeState>;

/** States of an owner's profile binding (ADR-0164 part 3). */
export const ProfileBindingState = z.enum(['active', 'revoked']);
export type ProfileBindingState = z.infer<typeof ProfileBindingState>;

/** A sign-in episode as the owner sees it: one per owner, profile and origin while open. */
export const SignInView = z.strictObject({
  id: z.string(),
  profile_id: z.string(),
  origin: z.string(),
  state: SignInEpisodeState,
  generation: z.int().min(1),
  question: z.string(),
  /** The host's last reported ceremony state, e.g. `awaiting_person` or `challenge`; null before the host answered. */
  ceremony_state: z.string().nullable(),
  /** Runs parked on it now. */
  waiting_runs: z.array(z.string()),
  /** Why the newest wait's page was taken for a sign-in wall (issue 17); empty when no run waits. */
  reasons: z.array(SignInReason),
  opened_at: z.string(),
  resolved_at: z.string().nullable(),
});
export type SignInView = z.infer<typeof SignInView>;
export const SignInList = z.strictObject({ sign_ins: z.array(SignInView) });
export type SignInList = z.infer<typeof SignInList>;

export const SignInListQuery = z.strictObject({ state: SignInEpisodeState.optional().meta({ examples: ['open'] }) });

/** An owner notice: exactly one per unresolved sign-in episode. */
export const NoticeView = z.strictObject({
  id: z.string(),
  kind: z.literal('sign_in_required'),
  episode_id: z.string(),
  run_id: z.string(),
  text: z.string(),
  created_at: z.string(),
  resolved_at: z.string().nullable(),
});
export type NoticeView = z.infer<typeof NoticeView>;
export const NoticeList = z.strictObject({ notices: z.array(NoticeView) });
export type NoticeList = z.infer<typeof NoticeList>;

/** What the edge answers a host's ceremony event delivery. */
export const CeremonyEventReceipt = z.strictObject({
  event_id: z.string(),
  outcome: z.string(),
  /** True only for the delivery that resolved the episode; a replay or a fenced event is false. */
  applied: z.boolean(),
  /** Runs this delivery requeued. */
  resumed_runs: z.array(z.string()),
});
export type CeremonyEventReceipt = z.infer<typeof CeremonyEventReceipt>;

/** A profile binding after revocation. */
export const ProfileBindingView = z.strictObject({
  profile_id: z.string(),
  state: ProfileBindingState,
  revoked_at: z.string().nullable(),
  /** Runs whose sign-in waits the revocation fenced (they end `failed`). */
  fenced_runs: z.array(z.string()),
});
export type ProfileBindingView = z.infer<typeof ProfileBindingView>;

/** A profile id in a path. */
export const ProfileParam = z.strictObject({ profile_id: RunProfileId.meta({ examples: ['old-laptop'] }) });

export const MessageBody = z.strictObject({ text: z.string().min(1).max(10_000) }).meta({ examples: [{ text: 'Also tick it done once it is listed.' }] });
export type MessageBody = z.infer<typeof MessageBody>;

export const MessageView = z.strictObject({
  id: z.string(),
  run_id: z.string(),
  trust: z.enum(['trusted', 'untrusted']),
  text: z.string(),
  created_at: z.string(),
});
export type MessageView = z.infer<typeof MessageView>;

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
      outcome: z.enum(['answered', 'host_error', 'not_sent', 'connection_lost', 'deadline_exceeded']).optional(),
    })
    .optional(),
  settle: SettleReport.optional(),
  postcondition: z.strictObject({ status: ConditionStatus, observations: z.int().min(1), elapsed_ms: z.int().min(0) }).optional(),
  /** An act's target as the observation showed it; checked by the host right before the input. */
  target: ActTarget.optional(),
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

export const ReportBody = z
  .strictObject({
    status: z.enum(['completed', 'partial', 'uncertain', 'failed']),
    summary: z.string().min(1).max(20_000),
  })
  .meta({ examples: [{ status: 'completed', summary: 'Added "Buy oat milk" to the todo list and ticked it done.' }] });
export type ReportBody = z.infer<typeof ReportBody>;

/** One entry of a run's passive activity record, oldest first. */
export const ActivityEntry = z.strictObject({
  at: z.string(),
  kind: z.enum(['run_created', 'message', 'tool_call', 'approval', 'effect', 'sign_in_wait', 'ceremony_event', 'run_ended']),
  id: z.string(),
  summary: z.string(),
});
export const ActivityList = z.strictObject({ run_id: z.string(), activity: z.array(ActivityEntry) });
export type ActivityList = z.infer<typeof ActivityList>;

export const HealthView = z.strictObject({
  status: z.literal('ok'),
  tools: z.record(z.string(), z.array(z.string())),
});

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

export const ApprovalsQuery = z.strictObject({ state: ApprovalState.optional().meta({ examples: ['pending'] }) });

/** The id of the run, tool call, approval or grant a path names. */
export const IdParam = z.strictObject({
  id: z
    .string()
    .min(1)
    .max(64)
    .meta({
      examples: ['run_k3v9dq2m7xw4ahz5ty6e', 'call_p2m7xw4ahz5ty6ek3v9d', 'apr_xw4ahz5ty6ek3v9dq2m7', 'grt_ahz5ty6ek3v9dq2m7xw4', 'sie_5ty6ek3v9dq2m7xw4ahz'],
    }),
});

/** `POST /v1/grants`: the owner lets calls of one scope run without asking, a bounded number of times. */
export const CreateGrantBody = z
  .strictObject({
    tool: z.literal('browser.act'),
    /** Action kinds covered; omitted covers every kind except what policy denies. */
    actions: z.array(ActionKind).min(1).max(ActionKind.options.length).optional(),
    /** The origin of the page the act touches. */
    origin: Origin,
    max_uses: z.int().min(1).max(1000),
    /** Lifetime from now, in ms (at most 30 days). */
    ttl_ms: z
      .int()
      .min(1_000)
      .max(30 * 24 * 3_600_000),
    /** The policy profile whose runs it covers (default `default`); it is bound to the version in force now. */
    policy_profile: z
      .string()
      .regex(/^[a-z0-9_-]{1,64}$/)
      .optional(),
  })
  .meta({ examples: [{ tool: 'browser.act', actions: ['click', 'check'], origin: 'http://127.0.0.1:8080', max_uses: 3, ttl_ms: 3_600_000 }] });
export type CreateGrantBody = z.infer<typeof CreateGrantBody>;

export const GrantView = z.strictObject({
  id: z.string(),
  tool: z.string(),
  actions: z.array(z.string()).nullable(),
  origin: z.string(),
  max_uses: z.int(),
  uses: z.int(),
  expires_at: z.string(),
  /** The policy profile and the hash of its version the grant was made under. */
  policy_profile: z.string(),
  policy_hash: z.string(),
  /**
   * Why the grant covers nothing now although it is neither revoked, expired nor used up: the
   * profile's version in force has another hash (`policy_changed`). Null while it covers.
   */
  not_covering: z.enum(['policy_changed']).nullable(),
  revoked_at: z.string().nullable(),
  created_at: z.string(),
});
export type GrantView = z.infer<typeof GrantView>;

/** `POST /v1/policy-profiles/{name}/versions/{version}/revoke-grants`: how many grants it revoked. */
export const RevokedGrants = z.strictObject({ policy_profile: z.string(), version: z.int(), policy_hash: z.string(), revoked: z.int() });
export type RevokedGrants = z.infer<typeof RevokedGrants>;
export const GrantList = z.strictObject({ grants: z.array(GrantView) });

/** `POST /v1/schedules`: a cron-fired run with trusted-configuration authority. */
export const CreateScheduleBody = z
  .strictObject({
    /** Five-field cron expression, UTC, e.g. `0 7 * * *`. */
    cron: z.string().min(9).max(100),
    intent: z.string().min(1).max(2000),
    profile_id: RunProfileId,
    origins: z.array(Origin).min(1).max(16),
    /** Tool versions every call of the run must use. */
    tool_versions: z.strictObject({ 'browser.navigate': ToolVersion, 'browser.observe': ToolVersion, 'browser.act': ToolVersion }),
    policy_profile: z
      .string()
      .regex(/^[a-z0-9_-]{1,64}$/)
      .optional(),
    /** Run deadline in ms; default five minutes. */
    deadline_ms: z.int().min(1_000).max(MAX_RUN_DEADLINE_MS).optional(),
  })
  .meta({
    examples: [
      {
        cron: '0 7 * * *',
        intent: 'Read my briefing page and summarise it',
        profile_id: 'me',
        origins: ['http://127.0.0.1:8080'],
        tool_versions: { 'browser.navigate': '1.2.0', 'browser.observe': '1.2.0', 'browser.act': '1.2.0' },
        policy_profile: 'default',
        deadline_ms: 300_000,
      },
    ],
  });
export type CreateScheduleBody = z.infer<typeof CreateScheduleBody>;

export const ScheduleView = z.strictObject({
  id: z.string(),
  cron: z.string(),
  intent: z.string(),
  profile_id: z.string(),
  origins: z.array(z.string()),
  tool_versions: z.record(z.string(), z.string()),
  policy_profile: z.string(),
  deadline_ms: z.int(),
  enabled: z.boolean(),
  created_at: z.string(),
});
export type ScheduleView = z.infer<typeof ScheduleView>;

/** Path parameter naming an owner (a principal id). */
export const OwnerParam = z.strictObject({
  owner_id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/)
    .meta({ examples: ['prn_local_owner'] }),
});

/**
 * An owner's webhook (issue 15), set by an operator: where "approval needed", "sign-in needed"
 * and "run ended" are posted (http or https), and the secret (32-256 characters) their
 * `X-Webhook-Signature` is made with: `t=<ms>,v1=<hex HMAC-SHA256 of "<ms>.<body>">`.
 */
export const OwnerWebhookBody = z
  .strictObject({
    url: z
      .string()
      .max(2048)
      .regex(/^https?:\/\/[^\s]+$/, 'an http or https URL'),
    secret: z.string().min(32).max(256),
  })
  .meta({ examples: [{ url: 'https://hooks.example/owner-7', secret: 'a-long-random-secret-of-at-least-32-characters' }] });
export type OwnerWebhookBody = z.infer<typeof OwnerWebhookBody>;

/** An owner's webhook as the API shows it: never its secret. */
export const OwnerWebhookView = z.strictObject({ owner_id: z.string(), url: z.string(), updated_at: z.string() });

/** A one-time sign-in link to the owner's console (`POST /console/links`): its URL and expiry (ISO 8601). */
export const ConsoleLinkView = z.strictObject({ url: z.string(), expires_at: z.string() });
export type ConsoleLinkView = z.infer<typeof ConsoleLinkView>;
