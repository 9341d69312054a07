import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

// Stored artifacts (screenshots) and their references.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

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
