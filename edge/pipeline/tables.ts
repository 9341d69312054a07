import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { ApprovalState, ToolCallState as ToolCallStateSchema } from '../../shared/api.ts';
import { PolicyEffect } from '../../shared/policy.ts';
import { valuesOf } from '../db/enum-values.ts';
import { runs } from '../runs/tables.ts';

// Tool calls, their approvals and the effect ledger: the governed pipeline's state.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

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

/**
 * The owner's decision on a parked call. Deciding it (pending to approved or denied) resumes its
 * run, when still `waiting_for_approval`, in the same statement, by the trigger
 * `runs_resume_when_approval_decided` (drizzle/0022_decision_and_outcome_triggers.sql).
 */
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

/**
 * The effect ledger: one watermark per external-write call, written `committed` before dispatch
 * (edge/pipeline/begin-dispatch.ts). It ends in its call's state (succeeded, failed, uncertain;
 * `finished_at` the call's update time) when the call leaves `dispatching`, by the trigger
 * `effects_finish_with_their_call` (drizzle/0022_decision_and_outcome_triggers.sql), never by a
 * statement of the edge's.
 */
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

export type ToolCallRow = typeof toolCalls.$inferSelect;
export type ApprovalRow = typeof approvals.$inferSelect;
export type ToolCallState = (typeof TOOL_CALL_STATES)[number];
