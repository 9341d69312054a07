import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { ApprovalState, ProfileBindingState, RunState as RunStateSchema, SignInEpisodeState, ToolCallState as ToolCallStateSchema } from '../../shared/api.ts';
import type { SignInReason } from '../../shared/authentication.ts';
import { PolicyEffect } from '../../shared/policy.ts';

/**
 * The edge's persistent state (D1 on Workers, a SQLite file elsewhere). Timestamps are epoch ms.
 * Migrations are generated from this file by drizzle-kit into `drizzle/` and applied with
 * `wrangler d1 migrations apply`. Invariants the database itself enforces (see the custom
 * migration `drizzle/0001_guards.sql`):
 * - at most one active call (waiting for approval or dispatching) per run: a partial unique index;
 * - a call can only become active while its run is `running`: a trigger;
 * - an effect watermark can only be written for a call that is `dispatching`, once: a trigger and
 *   a unique index.
 */

/** The values of a shared zod enum, as the non-empty tuple drizzle's text enums take. */
function valuesOf<T extends string>(schema: { readonly options: readonly T[] }): [T, ...T[]] {
  return schema.options as [T, ...T[]];
}

/** Who can call the API. Tokens are stored only as SHA-256 hex digests. */
export const principals = sqliteTable('principals', {
  id: text('id').primaryKey(),
  kind: text('kind', { enum: ['agent', 'owner', 'operator', 'host'] }).notNull(),
  /** The owner this principal acts for (an owner's own id for an owner). */
  ownerId: text('owner_id').notNull(),
  tokenHash: text('token_hash').notNull().unique(),
  label: text('label').notNull().default(''),
  createdAt: integer('created_at').notNull(),
});

/** Run states: the one definition is shared/api.ts `RunState`. */
export const RUN_STATES = valuesOf(RunStateSchema);

export const runs = sqliteTable(
  'runs',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    createdBy: text('created_by').notNull(),
    claimedBy: text('claimed_by'),
    profileId: text('profile_id').notNull(),
    intent: text('intent').notNull(),
    /** JSON array of allowed origins, e.g. `["http://127.0.0.1:8000"]`. */
    origins: text('origins', { mode: 'json' }).$type<string[]>().notNull(),
    state: text('state', { enum: RUN_STATES }).notNull(),
    /** `scheduled` runs come from a schedule and carry trusted-configuration authority. */
    kind: text('kind', { enum: ['interactive', 'scheduled'] })
      .notNull()
      .default('interactive'),
    scheduleId: text('schedule_id'),
    /** Name of the policy profile whose newest version decides this run's calls. */
    policyProfile: text('policy_profile').notNull().default('default'),
    /** JSON `{tool: version}` pinned by a schedule; proposals must use these versions. */
    pinnedVersions: text('pinned_versions', { mode: 'json' }).$type<Record<string, string>>(),
    /** A claim's expiry (epoch ms): past it, another agent may claim the run. */
    claimExpiresAt: integer('claim_expires_at'),
    deadlineAt: integer('deadline_at').notNull(),
    leaseId: text('lease_id'),
    leaseGeneration: integer('lease_generation'),
    /** When the host said the lease ends unless renewed (epoch ms, host clock); meaningful only with `leaseId`. */
    leaseExpiresAt: integer('lease_expires_at'),
    /** The newest page revision the host reported for this run's page. */
    latestRevision: integer('latest_revision'),
    /** URL of the page at that revision; an act touches this page's origin. */
    latestUrl: text('latest_url'),
    reportSummary: text('report_summary'),
    /**
     * Sign-in waits this run entered since its last semantic progress (a read or write that
     * answered without a sign-in wall); bounds repeated attempts (ADR-0164 part 4).
     */
    signInAttempts: integer('sign_in_attempts').notNull().default(0),
    /**
     * The reviewed recipe the run was bound to when it was created (issue 19): its id, version and
     * content hash. Null for the ordinary agent path. A bound run is carried out by the edge's
     * recipe runner alone; no agent claims it.
     */
    recipeId: text('recipe_id'),
    recipeVersion: integer('recipe_version'),
    recipeHash: text('recipe_hash'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('runs_owner_idx').on(t.ownerId, t.createdAt), index('runs_created_by_idx').on(t.createdBy, t.createdAt)],
);

export const messages = sqliteTable(
  'messages',
  {
    id: text('id').primaryKey(),
    runId: text('run_id')
      .notNull()
      .references(() => runs.id),
    principalId: text('principal_id').notNull(),
    trust: text('trust', { enum: ['trusted', 'untrusted'] }).notNull(),
    text: text('text').notNull(),
    /** JSON object of the message's named fields (shared/recipes.ts `MessageFields`); null when it has none. */
    fields: text('fields', { mode: 'json' }).$type<Record<string, string>>(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('messages_run_idx').on(t.runId, t.createdAt)],
);

/** Tool call states: the one definition is shared/api.ts `ToolCallState`. */
export const TOOL_CALL_STATES = valuesOf(ToolCallStateSchema);

export const toolCalls = sqliteTable(
  'tool_calls',
  {
    id: text('id').primaryKey(),
    runId: text('run_id')
      .notNull()
      .references(() => runs.id),
    principalId: text('principal_id').notNull(),
    /** As proposed; for a rejected proposal it may not name a real tool. */
    tool: text('tool').notNull(),
    version: text('version').notNull(),
    arguments: text('arguments', { mode: 'json' }).$type<unknown>().notNull(),
    argumentsHash: text('arguments_hash').notNull(),
    state: text('state', { enum: TOOL_CALL_STATES }).notNull(),
    decisionEffect: text('decision_effect', { enum: valuesOf(PolicyEffect) }),
    decisionRule: text('decision_rule'),
    policyHash: text('policy_hash'),
    result: text('result', { mode: 'json' }).$type<unknown>(),
    /**
     * JSON array of the canonical URLs the result's page content showed (shared/page-url.ts
     * `shownUrlsOf`), recorded with the result even when the result itself is too big to store.
     */
    shownUrls: text('shown_urls', { mode: 'json' }).$type<string[]>(),
    /** JSON array of the canonical URLs that are the run's own: a dispatched navigation's target. */
    ownUrls: text('own_urls', { mode: 'json' }).$type<string[]>(),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    retryable: integer('retryable', { mode: 'boolean' }),
    /** JSON object of phase records: decision, approval, watermark, dispatch, settle. */
    phases: text('phases', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    deadlineAt: integer('deadline_at'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    index('tool_calls_run_idx').on(t.runId, t.createdAt),
    index('tool_calls_principal_idx').on(t.principalId, t.createdAt),
    uniqueIndex('tool_calls_one_active_per_run').on(t.runId).where(sql`state IN ('waiting_for_approval', 'dispatching')`),
  ],
);

export const approvals = sqliteTable(
  'approvals',
  {
    id: text('id').primaryKey(),
    toolCallId: text('tool_call_id')
      .notNull()
      .unique()
      .references(() => toolCalls.id),
    runId: text('run_id')
      .notNull()
      .references(() => runs.id),
    ownerId: text('owner_id').notNull(),
    state: text('state', { enum: valuesOf(ApprovalState) }).notNull(),
    argumentsHash: text('arguments_hash').notNull(),
    policyHash: text('policy_hash').notNull(),
    decidedBy: text('decided_by'),
    decidedAt: integer('decided_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('approvals_owner_state_idx').on(t.ownerId, t.state, t.createdAt)],
);

/** The effect ledger: one watermark per external-write call, written before dispatch. */
export const effects = sqliteTable('effects', {
  id: text('id').primaryKey(),
  toolCallId: text('tool_call_id')
    .notNull()
    .unique()
    .references(() => toolCalls.id),
  runId: text('run_id')
    .notNull()
    .references(() => runs.id),
  state: text('state', { enum: ['committed', 'succeeded', 'failed', 'uncertain'] }).notNull(),
  committedAt: integer('committed_at').notNull(),
  finishedAt: integer('finished_at'),
});

/** Versions of operator-managed policy profiles; the newest version of a name is in force. */
export const policyProfiles = sqliteTable(
  'policy_profiles',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    version: integer('version').notNull(),
    rules: text('rules', { mode: 'json' }).$type<unknown[]>().notNull(),
    denies: text('denies', { mode: 'json' }).$type<unknown[]>().notNull(),
    /** SHA-256 of the canonical JSON of `{rules, denies}`. */
    hash: text('hash').notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('policy_profiles_name_version').on(t.name, t.version)],
);

/** Owner grants: a scoped, counted, expiring permission that covers calls instead of an approval. */
export const grants = sqliteTable(
  'grants',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    tool: text('tool').notNull(),
    /** JSON array of `browser.act` action kinds covered; null covers every kind. */
    actions: text('actions', { mode: 'json' }).$type<string[] | null>(),
    origin: text('origin').notNull(),
    maxUses: integer('max_uses').notNull(),
    uses: integer('uses').notNull().default(0),
    expiresAt: integer('expires_at').notNull(),
    /** The policy profile the grant was made under (runs under another profile are not covered). */
    policyProfile: text('policy_profile').notNull().default('default'),
    /** The hash of that profile's version in force when the owner granted it: only calls decided under it are covered. */
    policyHash: text('policy_hash').notNull(),
    revokedAt: integer('revoked_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('grants_owner_idx').on(t.ownerId, t.createdAt)],
);

/** One row per charged grant use; the primary key makes a second charge for a call impossible. */
export const grantUses = sqliteTable('grant_uses', {
  toolCallId: text('tool_call_id')
    .primaryKey()
    .references(() => toolCalls.id),
  grantId: text('grant_id')
    .notNull()
    .references(() => grants.id),
  chargedAt: integer('charged_at').notNull(),
});

/** Owner schedules: cron-fired runs with trusted-configuration authority and pinned versions. */
export const schedules = sqliteTable(
  'schedules',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    createdBy: text('created_by').notNull(),
    cron: text('cron').notNull(),
    intent: text('intent').notNull(),
    profileId: text('profile_id').notNull(),
    origins: text('origins', { mode: 'json' }).$type<string[]>().notNull(),
    toolVersions: text('tool_versions', { mode: 'json' }).$type<Record<string, string>>().notNull(),
    policyProfile: text('policy_profile').notNull(),
    deadlineMs: integer('deadline_ms').notNull(),
    enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
    /** The cron minute (epoch ms, floored) it last fired for; a conditional update guards it. */
    lastFiredFor: integer('last_fired_for'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('schedules_enabled_idx').on(t.enabled)],
);

/**
 * The trusted binding of an owner's profile to the host's sealed profile id (ADR-0164 part 3).
 * A revoked binding fences every wait on it and refuses new runs on the profile.
 */
export const profileBindings = sqliteTable(
  'profile_bindings',
  {
    ownerId: text('owner_id').notNull(),
    profileId: text('profile_id').notNull(),
    /** The id the host knows the sealed profile by (edge/profiles/bindings.ts `hostProfileId`). */
    hostProfileId: text('host_profile_id').notNull(),
    state: text('state', { enum: valuesOf(ProfileBindingState) }).notNull(),
    revokedAt: integer('revoked_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('profile_bindings_owner_profile').on(t.ownerId, t.profileId)],
);

/**
 * One sign-in episode: an owner's profile needs sign-in at an origin. Repeated detections (other
 * runs, other calls) join the open episode: at most one open episode per owner, profile and
 * origin (a partial unique index). `generation` counts ceremonies for that owner, profile and
 * origin across episodes; only an event of the episode's current generation and ceremony resolves it.
 */
export const signInEpisodes = sqliteTable(
  'sign_in_episodes',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    profileId: text('profile_id').notNull(),
    hostProfileId: text('host_profile_id').notNull(),
    origin: text('origin').notNull(),
    generation: integer('generation').notNull(),
    ceremonyId: text('ceremony_id').notNull().unique(),
    state: text('state', { enum: valuesOf(SignInEpisodeState) }).notNull(),
    /** What the owner is asked, e.g. "Sign in to http://… in the browser of profile me". */
    question: text('question').notNull(),
    /** Where the person signs in and which page proves it (given to the host's ceremony). */
    signInUrl: text('sign_in_url').notNull(),
    protectedUrl: text('protected_url').notNull(),
    /** The host's last reported ceremony state (awaiting_person, challenge, …), for display. */
    ceremonyState: text('ceremony_state'),
    resolvedBy: text('resolved_by'),
    openedAt: integer('opened_at').notNull(),
    resolvedAt: integer('resolved_at'),
    /** When the maintenance pass last asked the host about it (epoch ms); it takes the least recently checked first. */
    checkedAt: integer('checked_at'),
  },
  (t) => [
    uniqueIndex('sign_in_episodes_one_open').on(t.ownerId, t.profileId, t.origin).where(sql`state = 'open'`),
    index('sign_in_episodes_state_idx').on(t.state),
  ],
);

/** A run parked on a sign-in episode (run, trusted profile binding, question, generation). */
export const signInWaits = sqliteTable(
  'sign_in_waits',
  {
    id: text('id').primaryKey(),
    runId: text('run_id')
      .notNull()
      .references(() => runs.id),
    episodeId: text('episode_id')
      .notNull()
      .references(() => signInEpisodes.id),
    ownerId: text('owner_id').notNull(),
    hostProfileId: text('host_profile_id').notNull(),
    origin: text('origin').notNull(),
    question: text('question').notNull(),
    /** The episode's ceremony generation when the run parked. */
    generation: integer('generation').notNull(),
    /** The call whose answer showed the sign-in wall. */
    toolCallId: text('tool_call_id').notNull(),
    /** Why the host took the page for a sign-in wall (issue 17): the evidence, for the owner to read. */
    reasons: text('reasons', { mode: 'json' }).$type<SignInReason[]>().notNull().default(sql`'[]'`),
    state: text('state', { enum: ['pending', 'resolved', 'fenced'] }).notNull(),
    /** Why a fenced wait will not continue: cancelled, deadline_exceeded, profile_revoked, run_ended. */
    fenceReason: text('fence_reason'),
    resolvedBy: text('resolved_by'),
    createdAt: integer('created_at').notNull(),
    endedAt: integer('ended_at'),
  },
  (t) => [
    uniqueIndex('sign_in_waits_one_pending_per_run').on(t.runId).where(sql`state = 'pending'`),
    index('sign_in_waits_episode_idx').on(t.episodeId, t.state),
  ],
);

/** Owner notices: exactly one per sign-in episode (a unique episode id). */
export const notices = sqliteTable(
  'notices',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    kind: text('kind', { enum: ['sign_in_required'] }).notNull(),
    episodeId: text('episode_id')
      .notNull()
      .unique()
      .references(() => signInEpisodes.id),
    /** The run whose detection opened the episode. */
    runId: text('run_id').notNull(),
    text: text('text').notNull(),
    createdAt: integer('created_at').notNull(),
    resolvedAt: integer('resolved_at'),
  },
  (t) => [index('notices_owner_idx').on(t.ownerId, t.createdAt)],
);

/**
 * Ceremony outcome events as the host signed them, recorded durably before anything they change;
 * the host's stable event id makes a replay a no-op.
 */
export const ceremonyEvents = sqliteTable(
  'ceremony_events',
  {
    eventId: text('event_id').primaryKey(),
    ceremonyId: text('ceremony_id').notNull(),
    hostId: text('host_id').notNull(),
    hostProfileId: text('host_profile_id').notNull(),
    origin: text('origin').notNull(),
    generation: integer('generation').notNull(),
    outcome: text('outcome').notNull(),
    method: text('method').notNull(),
    accountSha256: text('account_sha256'),
    decidedAt: integer('decided_at').notNull(),
    receivedAt: integer('received_at').notNull(),
    via: text('via', { enum: ['callback', 'reconciliation', 'begin'] }).notNull(),
    /** True when this event resolved its episode. */
    applied: integer('applied', { mode: 'boolean' }).notNull().default(false),
  },
  (t) => [index('ceremony_events_ceremony_idx').on(t.ceremonyId)],
);

export type SignInEpisodeRow = typeof signInEpisodes.$inferSelect;
export type SignInWaitRow = typeof signInWaits.$inferSelect;
export type NoticeRow = typeof notices.$inferSelect;
export type CeremonyEventRow = typeof ceremonyEvents.$inferSelect;
export type RunRow = typeof runs.$inferSelect;
export type GrantRow = typeof grants.$inferSelect;
export type ScheduleRow = typeof schedules.$inferSelect;
export type PolicyProfileRow = typeof policyProfiles.$inferSelect;
export type ToolCallRow = typeof toolCalls.$inferSelect;
export type ApprovalRow = typeof approvals.$inferSelect;
export type PrincipalRow = typeof principals.$inferSelect;
export type RunState = (typeof RUN_STATES)[number];
export type ToolCallState = (typeof TOOL_CALL_STATES)[number];

/**
 * Refusals answered, by error code (`GET /metrics`): one row per code, counted up by the app's
 * error handler after it answered. Operational counts only; no domain state depends on them.
 */
export const refusalCounts = sqliteTable('refusal_counts', {
  code: text('code').primaryKey(),
  count: integer('count').notNull(),
});

/**
 * Fixed one-minute windows of the per-minute rates (edge/quotas/rates.ts): one row per key
 * (`agent:<id>:proposals`, `owner:<id>:runs`, ...), the window's start (epoch ms), the admissions
 * counted in it, and the token of the last admission (how a batch knows its first statement won).
 */
export const rateWindows = sqliteTable('rate_windows', {
  key: text('key').primaryKey(),
  windowStart: integer('window_start').notNull(),
  count: integer('count').notNull(),
  token: text('token').notNull(),
});

/**
 * Owners' console sessions (issue 15): the SHA-256 of the random session id the cookie carries
 * (never the id itself), its owner, the CSRF token every form post of the session must carry, and
 * when it began, expires and was ended (sign-out), all epoch ms.
 */
export const consoleSessions = sqliteTable(
  'console_sessions',
  {
    idHash: text('id_hash').primaryKey(),
    ownerId: text('owner_id').notNull(),
    csrfToken: text('csrf_token').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    endedAt: integer('ended_at'),
  },
  (t) => [index('console_sessions_owner_idx').on(t.ownerId, t.createdAt)],
);
export type ConsoleSessionRow = typeof consoleSessions.$inferSelect;

/**
 * One-time sign-in links for the console (issue 15; `npm run dev` prints one for the local
 * owner): the SHA-256 of the link's token, its owner, when it expires and when it was used (a
 * link opens one session, once), epoch ms.
 */
export const consoleLinks = sqliteTable('console_links', {
  tokenHash: text('token_hash').primaryKey(),
  ownerId: text('owner_id').notNull(),
  createdAt: integer('created_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
  usedAt: integer('used_at'),
});

/**
 * The webhook an operator set for an owner (issue 15): where "approval needed", "sign-in needed"
 * and "run ended" are posted, and the secret their HMAC-SHA256 signatures are made with.
 */
export const ownerWebhooks = sqliteTable('owner_webhooks', {
  ownerId: text('owner_id').primaryKey(),
  url: text('url').notNull(),
  secret: text('secret').notNull(),
  updatedAt: integer('updated_at').notNull(),
});

/**
 * The webhook outbox: one row per notification to deliver, its JSON body, how many attempts were
 * made, when the next is due (null once delivered or given up), when it was delivered, and the
 * last failure. Epoch ms.
 */
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    event: text('event', { enum: ['approval_needed', 'sign_in_needed', 'run_ended'] }).notNull(),
    body: text('body').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at'),
    deliveredAt: integer('delivered_at'),
    lastError: text('last_error'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('webhook_deliveries_due_idx').on(t.nextAttemptAt)],
);
export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;

/**
 * Screenshots for the owner's console (issue 15), one row per picture kept in the artifact store
 * (edge/artifacts/artifact-store.ts): its owner, run and call, why it was taken (`after`: the
 * page after the call's act or navigation settled; `parked`: the page when the call parked for
 * the owner, with the target's box), the store key, its size in bytes, its size in CSS px, the
 * target's box (JSON `{x, y, width, height}` in the picture's px, or null) and when it was taken
 * (epoch ms). At most one picture per call and kind. Rows go, objects first, by the owner's count
 * and by age (`ARTIFACT_MAX_PER_OWNER`, `ARTIFACT_MAX_AGE_HOURS`).
 */
export const artifacts = sqliteTable(
  'artifacts',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    runId: text('run_id').notNull(),
    toolCallId: text('tool_call_id').notNull(),
    kind: text('kind', { enum: ['after', 'parked'] }).notNull(),
    storeKey: text('store_key').notNull(),
    bytes: integer('bytes').notNull(),
    width: integer('width').notNull(),
    height: integer('height').notNull(),
    box: text('box', { mode: 'json' }).$type<{ x: number; y: number; width: number; height: number } | null>(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('artifacts_call_kind_idx').on(t.toolCallId, t.kind),
    index('artifacts_owner_idx').on(t.ownerId, t.createdAt),
    index('artifacts_created_idx').on(t.createdAt),
  ],
);
export type ArtifactRow = typeof artifacts.$inferSelect;

/**
 * One-time live-view links (issue 16): the SHA-256 of the random token in the link (never the
 * token), the owner and the console session it was issued to (the session's id hash), the
 * sign-in episode it shows, and when it was issued, expires (5 minutes to connect), was used to
 * connect (once) and ended, all epoch ms.
 */
export const liveViews = sqliteTable(
  'live_views',
  {
    tokenHash: text('token_hash').primaryKey(),
    ownerId: text('owner_id').notNull(),
    sessionHash: text('session_hash').notNull(),
    episodeId: text('episode_id').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    usedAt: integer('used_at'),
    endedAt: integer('ended_at'),
  },
  (t) => [index('live_views_episode_idx').on(t.episodeId)],
);
export type LiveViewRow = typeof liveViews.$inferSelect;

/**
 * What the MCP client an agent last initialized with can do (issue 18): the MCP endpoint is
 * stateless, so a tool call learns from here whether it may ask the client to show the owner's
 * console link (URL-mode elicitation). One row per agent principal, replaced by each `initialize`.
 */
export const mcpClients = sqliteTable('mcp_clients', {
  principalId: text('principal_id').primaryKey(),
  urlElicitation: integer('url_elicitation', { mode: 'boolean' }).notNull(),
  protocolVersion: text('protocol_version').notNull(),
  clientName: text('client_name'),
  updatedAt: integer('updated_at').notNull(),
});

/**
 * The operator's recipe catalog (issue 19, ADR-0164 part 5): one row per version of a recipe,
 * the newest version of an id in force. `body` is the whole shared/recipes.ts `RecipeBody`;
 * `hash` the SHA-256 of its canonical JSON. `phrases` holds the body's intent phrases in their
 * normalized form (`normalizedIntent`), for selection. Only the operator principal writes it.
 */
export const recipes = sqliteTable(
  'recipes',
  {
    rowId: text('row_id').primaryKey(),
    id: text('id').notNull(),
    version: integer('version').notNull(),
    enabled: integer('enabled', { mode: 'boolean' }).notNull(),
    reviewedFixture: text('reviewed_fixture').notNull(),
    origin: text('origin').notNull(),
    phrases: text('phrases', { mode: 'json' }).$type<string[]>().notNull(),
    body: text('body', { mode: 'json' }).$type<unknown>().notNull(),
    hash: text('hash').notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('recipes_id_version').on(t.id, t.version), index('recipes_origin_idx').on(t.origin)],
);
export type RecipeRow = typeof recipes.$inferSelect;

/**
 * The persisted progress of one recipe-bound run (issue 19): the next step to do (every step
 * before it proven), how many step executions and calls it used, when the recipe's 15 minutes end (epoch ms), the
 * call of the current step whose outcome it waits for (parked for approval, or in flight), the
 * sign-in wait it resumed from last, its outcome once ended, and the driver that holds it now (a
 * random token and until when, epoch ms): one driver at a time, taken by a conditional update.
 */
export const recipeProgress = sqliteTable('recipe_progress', {
  runId: text('run_id')
    .primaryKey()
    .references(() => runs.id),
  nextStep: integer('next_step').notNull().default(0),
  stepsBegun: integer('steps_begun').notNull().default(0),
  calls: integer('calls').notNull().default(0),
  startedAt: integer('started_at').notNull(),
  endsBy: integer('ends_by').notNull(),
  pendingCallId: text('pending_call_id'),
  /**
   * Set (epoch ms) right before the runner proposes a step's act and cleared once its call is
   * known: a driver that died in between leaves it, and the next one finds that call by it
   * instead of acting again.
   */
  actSince: integer('act_since'),
  /** The step execution the pending call belongs to has already returned to observation once. */
  returned: integer('returned', { mode: 'boolean' }).notNull().default(false),
  resumedWaitId: text('resumed_wait_id'),
  outcome: text('outcome'),
  driverToken: text('driver_token'),
  driverUntil: integer('driver_until'),
  updatedAt: integer('updated_at').notNull(),
});
export type RecipeProgressRow = typeof recipeProgress.$inferSelect;

/** The timeline of a recipe-bound run (issue 19): every fresh read, selection, call and verdict, with its evidence. */
export const recipeEvents = sqliteTable(
  'recipe_events',
  {
    id: text('id').primaryKey(),
    runId: text('run_id')
      .notNull()
      .references(() => runs.id),
    /** 0-based step index; null for the run as a whole. */
    step: integer('step'),
    kind: text('kind').notNull(),
    summary: text('summary').notNull(),
    toolCallId: text('tool_call_id'),
    evidence: text('evidence', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('recipe_events_run_idx').on(t.runId, t.createdAt)],
);
export type RecipeEventRow = typeof recipeEvents.$inferSelect;
