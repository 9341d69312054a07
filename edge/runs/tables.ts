import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { RunState as RunStateSchema } from '../../shared/api.ts';
import { valuesOf } from '../db/enum-values.ts';

// Runs and the messages of their owners and agents.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

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
    /**
     * The host (registry id and URL) the run's lease or lease reservation is on (issue 32): its
     * later calls go there while the lease lives, and a host's free slots count the runs here.
     */
    leaseHostId: text('lease_host_id'),
    leaseHostUrl: text('lease_host_url'),
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
  (t) => [
    // GET /v1/runs pages newest first by (created_at, id): an owner's runs, and everyone's for an operator.
    index('runs_owner_idx').on(t.ownerId, t.createdAt, t.id),
    index('runs_created_idx').on(t.createdAt, t.id),
    index('runs_created_by_idx').on(t.createdBy, t.createdAt),
    // A host's free slots count the live leases on it.
    index('runs_lease_host_idx').on(t.leaseHostId, t.leaseExpiresAt),
  ],
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

export type RunRow = typeof runs.$inferSelect;
export type RunState = (typeof RUN_STATES)[number];
