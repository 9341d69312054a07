import { integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

// Operator-managed policy profiles, by version.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

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

export type PolicyProfileRow = typeof policyProfiles.$inferSelect;
