import { and, asc, eq, isNull } from 'drizzle-orm';
import { MAX_RECIPE_DURATION_MS, type RecipeBody, type RecipeEventKind, type RecipeRunView } from '../../shared/recipes.ts';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type RecipeEventRow, type RecipeProgressRow, type RunRow, recipeEvents, recipeProgress } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { boundRecipe } from './catalog.ts';

/**
 * The persisted side of a recipe-bound run (issue 19): its progress row, written in the batch that
 * creates the run, and its timeline of events with their evidence.
 */

/**
 * The statement that starts a bound run's progress, for the batch that inserts the run: step 0,
 * nothing used, the recipe's limit 15 minutes after the run was created (the run's own deadline
 * still ends it first when sooner: `deadline_exceeded`).
 */
export function recipeProgressStatement(ports: Ports, run: RunRow, _body: RecipeBody) {
  return ports.db.insert(recipeProgress).values({
    runId: run.id,
    startedAt: run.createdAt,
    endsBy: run.createdAt + MAX_RECIPE_DURATION_MS,
    updatedAt: run.createdAt,
  });
}

/** What one timeline entry records besides its kind and words. */
export interface RecipeEventDetail {
  readonly toolCallId?: string;
  readonly evidence?: Record<string, unknown>;
}

/** Records one timeline entry of a bound run (`step` 0-based, null for the run as a whole). */
export async function recordRecipeEvent(
  ports: Ports,
  runId: string,
  step: number | null,
  kind: RecipeEventKind,
  summary: string,
  detail: RecipeEventDetail = {},
): Promise<void> {
  await ports.db.insert(recipeEvents).values({
    id: newId('rce'),
    runId,
    step,
    kind,
    summary: summary.slice(0, 2_000),
    toolCallId: detail.toolCallId ?? null,
    evidence: detail.evidence ?? {},
    createdAt: ports.clock.now(),
  });
}

/** The progress row of a bound run, or undefined for a run no recipe is bound to. */
export function progressOf(ports: Ports, runId: string): Promise<RecipeProgressRow | undefined> {
  return ports.db.select().from(recipeProgress).where(eq(recipeProgress.runId, runId)).get();
}

/** Most timeline entries one view shows (a run makes at most 64 calls; each step a handful of entries). */
const MAX_EVENTS = 1_000;

/** A bound run's timeline entries, oldest first. */
export function eventsOf(ports: Ports, runId: string): Promise<RecipeEventRow[]> {
  return ports.db.select().from(recipeEvents).where(eq(recipeEvents.runId, runId)).orderBy(asc(recipeEvents.createdAt)).limit(MAX_EVENTS);
}

/**
 * `GET /v1/runs/{id}/recipe`: the recipe of a bound run, its persisted progress, and every step
 * with its evidence and calls.
 * @throws DomainError('not_found') when no recipe is bound to the run.
 */
export async function recipeRunView(ports: Ports, run: RunRow): Promise<RecipeRunView> {
  const progress = await progressOf(ports, run.id);
  if (run.recipeId === null || run.recipeVersion === null || run.recipeHash === null || progress === undefined) {
    throw new DomainError('not_found', `no recipe is bound to run ${run.id}; it takes the ordinary agent path`);
  }
  const { body } = await boundRecipe(ports, run.recipeId, run.recipeVersion);
  const events = await eventsOf(ports, run.id);
  const view = (row: RecipeEventRow) => ({
    at: iso(row.createdAt),
    step: row.step,
    kind: row.kind as RecipeRunView['events'][number]['kind'],
    summary: row.summary,
    tool_call_id: row.toolCallId,
    evidence: row.evidence,
  });
  return {
    run_id: run.id,
    recipe: { id: run.recipeId, version: run.recipeVersion, hash: run.recipeHash },
    next_step: progress.nextStep,
    steps_begun: progress.stepsBegun,
    calls: progress.calls,
    ends_by: iso(Math.min(progress.endsBy, run.deadlineAt)),
    outcome: (progress.outcome as RecipeRunView['outcome']) ?? null,
    steps: body.steps.map((step, index) => {
      const own = events.filter((event) => event.step === index);
      const stopped = own.some((event) => event.kind === 'stopped');
      return {
        index,
        title: step.title,
        state: index < progress.nextStep ? ('done' as const) : stopped ? ('stopped' as const) : ('pending' as const),
        tool_call_ids: [...new Set(own.flatMap((event) => (event.toolCallId === null ? [] : [event.toolCallId])))],
        events: own.map(view),
      };
    }),
    events: events.filter((event) => event.step === null).map(view),
  };
}

/** The bound runs among `runIds` that have not ended: the ones a kick should drive. */
export async function boundRunsAmong(ports: Ports, runIds: readonly string[]): Promise<string[]> {
  const bound: string[] = [];
  for (const runId of runIds.slice(0, 100)) {
    const progress = await ports.db
      .select({ runId: recipeProgress.runId })
      .from(recipeProgress)
      .where(and(eq(recipeProgress.runId, runId)))
      .get();
    if (progress && !bound.includes(runId)) bound.push(runId);
  }
  return bound;
}

/** Records on a bound run's progress how the run ended without the runner (its deadline, a cancel), once; nothing for another run. */
export async function noteRecipeEnd(ports: Ports, run: RunRow): Promise<void> {
  const changed = await ports.db
    .update(recipeProgress)
    .set({ outcome: run.state, updatedAt: ports.clock.now() })
    .where(and(eq(recipeProgress.runId, run.id), isNull(recipeProgress.outcome)))
    .run();
  if (rowsChanged(changed) === 1) await recordRecipeEvent(ports, run.id, null, 'ended', `The run ended ${run.state.replaceAll('_', ' ')}.`);
}
