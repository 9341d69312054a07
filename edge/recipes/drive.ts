import { and, eq, isNull, lt, or } from 'drizzle-orm';
import { TERMINAL_RUN_STATES } from '../../shared/api.ts';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { messages, recipeProgress } from '../db/schema.ts';
import { Deadline } from '../deadline.ts';
import type { Ports } from '../ports.ts';
import { boundRecipe } from './catalog.ts';
import { DriveContext, type DriveOutcome, DriveStop } from './drive-context.ts';
import { eventsOf, progressOf } from './progress.ts';
import { executeStep, settlePending } from './step.ts';

/**
 * The recipe runner (issue 19, ADR-0164 part 5, DESIGN.md section 9): advances a recipe-bound run
 * one step at a time, each step from a fresh observation, each action one ordinary tool call
 * through the whole pipeline (admission, validation, the owner's authority, policy, approval or
 * grant, watermark, settle, postcondition), proposed as the run's only principal. It runs inside
 * the edge: on Workers in `ctx.waitUntil` after the request that created, approved or resumed the
 * run and in the cron pass (./scheduling.ts); on Node and Deno the same code in-process.
 *
 * The rooms: this file takes the run's driver slot and loops over steps; ./step.ts executes one
 * step (./fresh-read.ts reads, ./judge.ts judges the act's call, ./refusals.ts is the one table of
 * refusals); ./drive-context.ts holds the drive's state and ends the run with ./report.ts;
 * ./wording.ts words the timeline.
 *
 * The rules, in the ADR's words:
 * - "Recipes carry expected states, not live references or previous approvals": a step's target
 *   is found on the fresh observation by role and exact name; exactly one match, else ambiguous.
 * - "Persist verified step progress": a step counts as done only when its postcondition is
 *   satisfied, or, after a return to observation, when the evidence shows it took effect (its
 *   postcondition, or the next step's expected state).
 * - "Ambiguous outcomes return to observation instead of replay": an ambiguous target, an
 *   unproven or `uncertain` act goes back to a fresh read; an act that was sent and not proven
 *   is never sent again, also when a sign-in wall answered it and the run resumed after the
 *   sign-in. Without evidence the run stops.
 * - "Each recipe is limited to 16 steps, 64 calls and 15 minutes inside the existing run
 *   budget": past any of them the run ends `partial`.
 * - "Completion or uncertainty forces a tool-free final report": written from the recorded
 *   evidence, with status `completed`, `partial` or `uncertain`.
 */

/** How long one drive goes on starting new calls, in ms: Workers keep `waitUntil` work 30 s after the answer; the cron pass continues it. */
export const RECIPE_DRIVE_BUDGET_MS = 20_000;

/** How long past the drive's budget and one tool deadline a dead driver's slot lapses, in ms. */
const DRIVER_SLOT_GRACE_MS = 10_000;

/**
 * Drives the bound run `runId` for up to `budgetMs` (default {@link RECIPE_DRIVE_BUDGET_MS}): takes
 * the run's driver slot with a conditional update (one driver at a time; a slot left by a dead
 * driver lapses after the budget plus one tool deadline), then advances step by step until the
 * run parks (approval, sign-in), ends, or the budget is spent (the next cron pass goes on). Never
 * throws for the run's own trouble: it becomes the run's outcome or waits for the next pass.
 */
export async function driveRecipeRun(ports: Ports, runId: string, budgetMs = RECIPE_DRIVE_BUDGET_MS): Promise<DriveOutcome> {
  const now = ports.clock.now();
  const token = newId('rdr');
  const taken = await ports.db
    .update(recipeProgress)
    .set({ driverToken: token, driverUntil: now + budgetMs + ports.config.toolDeadlineMs + DRIVER_SLOT_GRACE_MS })
    .where(and(eq(recipeProgress.runId, runId), isNull(recipeProgress.outcome), or(isNull(recipeProgress.driverUntil), lt(recipeProgress.driverUntil, now))))
    .run();
  if (rowsChanged(taken) !== 1) return (await progressOf(ports, runId)) ? 'busy' : 'not_bound';
  try {
    return await drive(new DriveContext(ports, runId, token, Deadline.at(ports.clock, now + budgetMs)));
  } finally {
    await ports.db
      .update(recipeProgress)
      .set({ driverToken: null, driverUntil: null })
      .where(and(eq(recipeProgress.runId, runId), eq(recipeProgress.driverToken, token)));
  }
}

/** The loop of one drive: the run's state decides, then the pending call or the next step. */
async function drive(run: DriveContext): Promise<DriveOutcome> {
  const { ports, runId } = run;
  try {
    await run.load();
    run.recipe = (await boundRecipe(ports, run.run.recipeId!, run.run.recipeVersion!)).body;
    const first = await ports.db
      .select({ fields: messages.fields })
      .from(messages)
      .where(and(eq(messages.runId, runId), eq(messages.trust, 'trusted')))
      .orderBy(messages.createdAt)
      .limit(1)
      .get();
    run.fields = first?.fields ?? {};
    if (run.progress.stepsBegun === 0 && run.progress.calls === 0 && (await eventsOf(ports, runId)).length === 0) {
      await run.event(null, 'bound', `Bound to the reviewed recipe ${run.run.recipeId} version ${run.run.recipeVersion} (${run.recipe.steps.length} steps).`, {
        evidence: { recipe: run.run.recipeId, version: run.run.recipeVersion, hash: run.run.recipeHash },
      });
    }
    for (;;) {
      await run.load();
      if ((TERMINAL_RUN_STATES as readonly string[]).includes(run.run.state)) return await run.noteEnded();
      if (run.run.state === 'waiting_for_approval' || run.run.state === 'waiting_for_authentication') return 'parked';
      if (ports.clock.now() >= run.progress.endsBy) return await run.end('partial', "the recipe's 15-minute limit was reached");
      if (run.budget.passed()) return 'later';
      if (run.progress.pendingCallId !== null || run.progress.actSince !== null) {
        const settled = await settlePending(run);
        if (settled !== undefined) return settled;
        continue;
      }
      if (run.progress.nextStep >= run.recipe.steps.length) return await run.end('completed', undefined);
      const outcome = await executeStep(run, run.progress.nextStep);
      if (outcome !== undefined) return outcome;
    }
  } catch (error) {
    if (!(error instanceof DriveStop)) throw error;
    if (error.outcome === 'ended') {
      // The run ended under this drive (cancelled, past its deadline): record how, once.
      await run.load().catch(() => undefined);
      if (run.run !== undefined && (TERMINAL_RUN_STATES as readonly string[]).includes(run.run.state)) await run.noteEnded();
    }
    return error.outcome;
  }
}
