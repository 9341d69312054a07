import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

// Rate windows for the quotas.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

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
