import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

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

export const RUN_STATES = [
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
] as const;

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
    deadlineAt: integer('deadline_at').notNull(),
    leaseId: text('lease_id'),
    leaseGeneration: integer('lease_generation'),
    /** The newest page revision the host reported for this run's page. */
    latestRevision: integer('latest_revision'),
    reportSummary: text('report_summary'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('runs_owner_idx').on(t.ownerId, t.createdAt)],
);

export const messages = sqliteTable(
  'messages',
  {
    id: text('id').primaryKey(),
    runId: text('run_id').notNull().references(() => runs.id),
    principalId: text('principal_id').notNull(),
    trust: text('trust', { enum: ['trusted', 'untrusted'] }).notNull(),
    text: text('text').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('messages_run_idx').on(t.runId, t.createdAt)],
);

export const TOOL_CALL_STATES = [
  'rejected',
  'denied',
  'waiting_for_approval',
  'dispatching',
  'succeeded',
  'failed',
  'uncertain',
  'cancelled',
] as const;

export const toolCalls = sqliteTable(
  'tool_calls',
  {
    id: text('id').primaryKey(),
    runId: text('run_id').notNull().references(() => runs.id),
    principalId: text('principal_id').notNull(),
    /** As proposed; for a rejected proposal it may not name a real tool. */
    tool: text('tool').notNull(),
    version: text('version').notNull(),
    arguments: text('arguments', { mode: 'json' }).$type<unknown>().notNull(),
    argumentsHash: text('arguments_hash').notNull(),
    state: text('state', { enum: TOOL_CALL_STATES }).notNull(),
    decisionEffect: text('decision_effect', { enum: ['allow', 'approval', 'deny'] }),
    decisionRule: text('decision_rule'),
    policyHash: text('policy_hash'),
    result: text('result', { mode: 'json' }).$type<unknown>(),
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
    uniqueIndex('tool_calls_one_active_per_run')
      .on(t.runId)
      .where(sql`state IN ('waiting_for_approval', 'dispatching')`),
  ],
);

export const approvals = sqliteTable(
  'approvals',
  {
    id: text('id').primaryKey(),
    toolCallId: text('tool_call_id').notNull().unique().references(() => toolCalls.id),
    runId: text('run_id').notNull().references(() => runs.id),
    ownerId: text('owner_id').notNull(),
    state: text('state', { enum: ['pending', 'approved', 'denied', 'cancelled'] }).notNull(),
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
  toolCallId: text('tool_call_id').notNull().unique().references(() => toolCalls.id),
  runId: text('run_id').notNull().references(() => runs.id),
  state: text('state', { enum: ['committed', 'succeeded', 'failed', 'uncertain'] }).notNull(),
  committedAt: integer('committed_at').notNull(),
  finishedAt: integer('finished_at'),
});

export type RunRow = typeof runs.$inferSelect;
export type ToolCallRow = typeof toolCalls.$inferSelect;
export type ApprovalRow = typeof approvals.$inferSelect;
export type PrincipalRow = typeof principals.$inferSelect;
export type RunState = (typeof RUN_STATES)[number];
export type ToolCallState = (typeof TOOL_CALL_STATES)[number];
