import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

// Owner schedules.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

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

export type ScheduleRow = typeof schedules.$inferSelect;
