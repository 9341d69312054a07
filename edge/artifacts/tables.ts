import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

// Stored artifacts (screenshots, run files, downloads) and their references.
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

/**
 * Files the owner attached to a run for upload acts (issue 33): the run and its owner, the name
 * and media type the owner gave, the size in bytes, the SHA-256 of the bytes (hex), the store key
 * (edge/artifacts/artifact-store.ts `runFileKey`) and when it was attached (epoch ms). At most
 * `MAX_RUN_FILES` per run (shared/run-files.ts), checked where the row is written. Rows go,
 * objects first, when the owner removes one and by age (`ARTIFACT_MAX_AGE_HOURS`).
 */
export const runFiles = sqliteTable(
  'run_files',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    runId: text('run_id').notNull(),
    name: text('name').notNull(),
    mimeType: text('mime_type').notNull(),
    bytes: integer('bytes').notNull(),
    sha256: text('sha256').notNull(),
    storeKey: text('store_key').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('run_files_run_idx').on(t.runId, t.createdAt), index('run_files_created_idx').on(t.createdAt)],
);

export type RunFileRow = typeof runFiles.$inferSelect;

/**
 * What a run's page gave it (issue 33), kept in the artifact store and shown to the owner and the
 * run's agent: `download`, a file the page downloaded (never opened; at most `MAX_RUN_DOWNLOADS`
 * per run), and `observation_screenshot`, the viewport JPEG an observe asked for (with its size in
 * CSS px). Each row names its run, owner, the call that brought it (any number per call), the name
 * and media type shown, the store key, the size in bytes and when it was kept (epoch ms). Rows
 * go, objects first, by the owner's count and by age (`ARTIFACT_MAX_PER_OWNER`,
 * `ARTIFACT_MAX_AGE_HOURS`), like the owner's screenshots.
 */
export const runArtifacts = sqliteTable(
  'run_artifacts',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    runId: text('run_id').notNull(),
    toolCallId: text('tool_call_id'),
    kind: text('kind', { enum: ['download', 'observation_screenshot'] }).notNull(),
    name: text('name').notNull(),
    mimeType: text('mime_type').notNull(),
    storeKey: text('store_key').notNull(),
    bytes: integer('bytes').notNull(),
    width: integer('width'),
    height: integer('height'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    index('run_artifacts_run_idx').on(t.runId, t.kind, t.createdAt),
    index('run_artifacts_owner_idx').on(t.ownerId, t.createdAt),
    index('run_artifacts_created_idx').on(t.createdAt),
  ],
);

export type RunArtifactRow = typeof runArtifacts.$inferSelect;
