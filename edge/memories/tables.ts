import { index, integer, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { AnticipationOffReason, MemorySource, MemoryState, RefusalReason, SuggestionState } from '../../shared/memories.ts';
import { valuesOf } from '../db/enum-values.ts';

// Owner memories, agents' suggestions, runs' anticipations and the memory evidence recorded per
// policy profile version (issue 34, ADR-0168, DESIGN.md section 19).
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

/**
 * The owner's memories: the statement (at most 500 characters), where it came from (`owner` or an
 * accepted `suggestion`, then its id), `active` or `retired` (final), the revision (1, +1 per
 * edit; conditional updates name it) and epoch-ms instants. Never read across owners.
 */
export const memories = sqliteTable(
  'memories',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    statement: text('statement').notNull(),
    source: text('source', { enum: valuesOf(MemorySource) }).notNull(),
    suggestionId: text('suggestion_id'),
    state: text('state', { enum: valuesOf(MemoryState) }).notNull(),
    revision: integer('revision').notNull().default(1),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    retiredAt: integer('retired_at'),
  },
  (t) => [index('memories_owner_idx').on(t.ownerId, t.state, t.createdAt), uniqueIndex('memories_suggestion_idx').on(t.suggestionId)],
);
export type MemoryRow = typeof memories.$inferSelect;

/**
 * What agents proposed in their run reports: the run, the proposing agent, the statement, whether
 * the agent read it on a page, and the owner's decision (`pending` until then; final after). An
 * accepted suggestion names the memory it made.
 */
export const memorySuggestions = sqliteTable(
  'memory_suggestions',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    runId: text('run_id').notNull(),
    proposedBy: text('proposed_by').notNull(),
    statement: text('statement').notNull(),
    pageDerived: integer('page_derived', { mode: 'boolean' }).notNull(),
    state: text('state', { enum: valuesOf(SuggestionState) }).notNull(),
    memoryId: text('memory_id'),
    createdAt: integer('created_at').notNull(),
    decidedAt: integer('decided_at'),
  },
  (t) => [index('memory_suggestions_owner_idx').on(t.ownerId, t.state, t.createdAt), index('memory_suggestions_run_idx').on(t.runId)],
);
export type MemorySuggestionRow = typeof memorySuggestions.$inferSelect;

/**
 * One row per run whose anticipation was decided at its start: `ran` or `off` (with the reason
 * code and sentence), the provider id, the policy profile name, version and hash it was decided
 * under, the provider calls made and their cost (USD).
 */
export const runAnticipations = sqliteTable('run_anticipations', {
  runId: text('run_id').primaryKey(),
  ownerId: text('owner_id').notNull(),
  state: text('state', { enum: ['ran', 'off'] }).notNull(),
  reason: text('reason', { enum: valuesOf(AnticipationOffReason) }),
  message: text('message'),
  provider: text('provider').notNull(),
  policyProfile: text('policy_profile').notNull(),
  policyVersion: integer('policy_version').notNull(),
  policyHash: text('policy_hash').notNull(),
  providerCalls: integer('provider_calls').notNull(),
  costUsd: real('cost_usd').notNull(),
  createdAt: integer('created_at').notNull(),
});
export type RunAnticipationRow = typeof runAnticipations.$inferSelect;

/**
 * Every prediction of a run's anticipation, in the provider's order (`position` from 0): verified
 * ones (the owner's statement, shown on the run) and refused ones with their reason (the owner's
 * record only). `memoryId` is null for a prediction that cited none the schema admits.
 */
export const anticipationPredictions = sqliteTable(
  'anticipation_predictions',
  {
    id: text('id').primaryKey(),
    runId: text('run_id').notNull(),
    ownerId: text('owner_id').notNull(),
    position: integer('position').notNull(),
    memoryId: text('memory_id'),
    statement: text('statement').notNull(),
    verdict: text('verdict', { enum: ['verified', 'refused'] }).notNull(),
    reason: text('reason', { enum: valuesOf(RefusalReason) }),
  },
  (t) => [uniqueIndex('anticipation_predictions_run_idx').on(t.runId, t.position)],
);
export type AnticipationPredictionRow = typeof anticipationPredictions.$inferSelect;

/**
 * Memory evidence bundles operators published (shared/memory-evidence.ts): the provider id, the
 * policy profile name, version and hash, the gates as the edge recomputed them (all passed: a
 * failing bundle is refused, never stored), the whole bundle (JSON), who published it and when.
 */
export const memoryEvidence = sqliteTable(
  'memory_evidence',
  {
    id: text('id').primaryKey(),
    provider: text('provider').notNull(),
    policyProfile: text('policy_profile').notNull(),
    policyVersion: integer('policy_version').notNull(),
    policyHash: text('policy_hash').notNull(),
    bundle: text('bundle', { mode: 'json' }).notNull(),
    publishedBy: text('published_by').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('memory_evidence_hash_idx').on(t.policyHash, t.provider)],
);
export type MemoryEvidenceRow = typeof memoryEvidence.$inferSelect;
