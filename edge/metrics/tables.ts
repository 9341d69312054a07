import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

// Refusal counters for the metrics endpoint.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

/**
 * Refusals answered, by error code (`GET /metrics`): one row per code, counted up by the app's
 * error handler after it answered. Operational counts only; no domain state depends on them.
 */
export const refusalCounts = sqliteTable('refusal_counts', {
  code: text('code').primaryKey(),
  count: integer('count').notNull(),
});
