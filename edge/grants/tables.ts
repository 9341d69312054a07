import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { toolCalls } from '../pipeline/tables.ts';

// Owner grants and the uses charged against them.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

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

export type GrantRow = typeof grants.$inferSelect;
