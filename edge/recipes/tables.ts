import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { runs } from '../runs/tables.ts';

// Reviewed recipes, the progress of recipe-bound runs and their timelines.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

/**
 * The operator's recipe catalog (issue 19, ADR-0164 part 5): one row per version of a recipe,
 * the newest version of an id in force. `body` is the whole shared/recipes.ts `RecipeBody`;
 * `hash` the SHA-256 of its canonical JSON. `phrases` holds the body's intent phrases in their
 * normalized form (`normalizedIntent`), for selection. Only the operator principal writes it.
 */
export const recipes = sqliteTable(
  'recipes',
  {
    rowId: text('row_id').primaryKey(),
    id: text('id').notNull(),
    version: integer('version').notNull(),
    enabled: integer('enabled', { mode: 'boolean' }).notNull(),
    reviewedFixture: text('reviewed_fixture').notNull(),
    origin: text('origin').notNull(),
    phrases: text('phrases', { mode: 'json' }).$type<string[]>().notNull(),
    body: text('body', { mode: 'json' }).$type<unknown>().notNull(),
    hash: text('hash').notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('recipes_id_version').on(t.id, t.version), index('recipes_origin_idx').on(t.origin)],
);

export type RecipeRow = typeof recipes.$inferSelect;

/**
 * The persisted progress of one recipe-bound run (issue 19): the next step to do (every step
 * before it proven), how many step executions and calls it used, when the recipe's 15 minutes end (epoch ms), the
 * call of the current step whose outcome it waits for (parked for approval, or in flight), the
 * sign-in wait it resumed from last, its outcome once ended, and the driver that holds it now (a
 * random token and until when, epoch ms): one driver at a time, taken by a conditional update.
 */
export const recipeProgress = sqliteTable('recipe_progress', {
  runId: text('run_id')
    .primaryKey()
    .references(() => runs.id),
  nextStep: integer('next_step').notNull().default(0),
  stepsBegun: integer('steps_begun').notNull().default(0),
  calls: integer('calls').notNull().default(0),
  startedAt: integer('started_at').notNull(),
  endsBy: integer('ends_by').notNull(),
  pendingCallId: text('pending_call_id'),
  /**
   * Set (epoch ms) right before the runner proposes a step's act and cleared once its call is
   * known: a driver that died in between leaves it, and the next one finds that call by it
   * instead of acting again.
   */
  actSince: integer('act_since'),
  /** The step execution the pending call belongs to has already returned to observation once. */
  returned: integer('returned', { mode: 'boolean' }).notNull().default(false),
  resumedWaitId: text('resumed_wait_id'),
  outcome: text('outcome'),
  driverToken: text('driver_token'),
  driverUntil: integer('driver_until'),
  updatedAt: integer('updated_at').notNull(),
});

export type RecipeProgressRow = typeof recipeProgress.$inferSelect;

/** The timeline of a recipe-bound run (issue 19): every fresh read, selection, call and verdict, with its evidence. */
export const recipeEvents = sqliteTable(
  'recipe_events',
  {
    id: text('id').primaryKey(),
    runId: text('run_id')
      .notNull()
      .references(() => runs.id),
    /** 0-based step index; null for the run as a whole. */
    step: integer('step'),
    kind: text('kind').notNull(),
    summary: text('summary').notNull(),
    toolCallId: text('tool_call_id'),
    evidence: text('evidence', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('recipe_events_run_idx').on(t.runId, t.createdAt)],
);

export type RecipeEventRow = typeof recipeEvents.$inferSelect;
