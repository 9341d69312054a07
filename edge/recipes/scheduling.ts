import { and, eq, inArray, isNull, lt, or } from 'drizzle-orm';
import { TERMINAL_RUN_STATES } from '../../shared/api.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type RecipeProgressRow, type RunRow, recipeProgress, runs } from '../db/schema.ts';
import type { Ports } from '../ports.ts';
import { fenceRunStatements } from '../runs/fence.ts';
import { expireIfPastDeadline } from '../runs/lifecycle.ts';
import { releaseEpisodesOf } from '../sign-in/release.ts';
import { driveRecipeRun } from './drive.ts';
import { noteRecipeEnd, recordRecipeEvent } from './progress.ts';
import { reportOf } from './report.ts';

/**
 * When recipe-bound runs are driven (issue 19): right after the request that created, approved or
 * resumed them (`ports.background`, Workers' `ctx.waitUntil`), and by the cron pass, which also
 * ends the runs parked past a limit.
 */

/** Most run ids one kick looks up (D1's bound parameters per statement stay well under 100). */
const KICKED_RUNS = 90;

/** Most bound runs one cron pass ends or drives. */
const RUNS_PER_PASS = 8;

/**
 * Hands a drive of each bound run among `runIds` (the first 90) to `ports.background` (after the
 * request that created, approved or resumed them answered). Runs no recipe is bound to, or that
 * ended, are left alone.
 */
export async function kickRecipeRuns(ports: Ports, runIds: readonly string[]): Promise<void> {
  if (runIds.length === 0) return;
  const bound = await ports.db
    .select({ runId: recipeProgress.runId })
    .from(recipeProgress)
    .where(and(inArray(recipeProgress.runId, [...runIds].slice(0, KICKED_RUNS)), isNull(recipeProgress.outcome)));
  for (const { runId } of bound) ports.background(`the recipe run ${runId}`, () => driveRecipeRun(ports, runId));
}

/**
 * The cron pass's part (edge/cron-pass.ts): ends bound runs parked past the run's deadline
 * (`deadline_exceeded`) or past the recipe's 15 minutes (`partial`), with their approval cancelled
 * and their sign-in wait fenced, then drives up to 8 bound runs that are running or queued and
 * held by no driver.
 * @returns how many runs it drove.
 */
export async function driveDueRecipeRuns(ports: Ports): Promise<number> {
  const now = ports.clock.now();
  const overdue = await ports.db
    .select({ run: runs, progress: recipeProgress })
    .from(recipeProgress)
    .innerJoin(runs, eq(runs.id, recipeProgress.runId))
    .where(
      and(
        isNull(recipeProgress.outcome),
        or(lt(recipeProgress.endsBy, now), lt(runs.deadlineAt, now)),
        inArray(runs.state, ['waiting_for_approval', 'waiting_for_authentication']),
      ),
    )
    .limit(RUNS_PER_PASS);
  for (const { run, progress } of overdue) {
    // The run's own deadline comes first: past it, the run is `deadline_exceeded`, not at a recipe limit.
    const current = await expireIfPastDeadline(ports, run);
    if (current.state === 'deadline_exceeded') {
      await noteRecipeEnd(ports, current);
      continue;
    }
    await endParkedAtLimit(ports, current, progress);
  }
  const due = await ports.db
    .select({ runId: recipeProgress.runId })
    .from(recipeProgress)
    .innerJoin(runs, eq(runs.id, recipeProgress.runId))
    .where(
      and(
        isNull(recipeProgress.outcome),
        or(isNull(recipeProgress.driverUntil), lt(recipeProgress.driverUntil, now)),
        inArray(runs.state, ['running', 'queued', ...TERMINAL_RUN_STATES]),
      ),
    )
    .orderBy(recipeProgress.updatedAt)
    .limit(RUNS_PER_PASS);
  for (const { runId } of due) await driveRecipeRun(ports, runId);
  return due.length;
}

/**
 * Ends a bound run parked past its 15-minute limit: `partial`, its parked approval cancelled and
 * its sign-in wait fenced, in one batch; then releases the sign-in episode it waited on when no
 * other run waits on it (see `releaseEpisodesOf`: its browser is free at once).
 */
async function endParkedAtLimit(ports: Ports, run: RunRow, progress: RecipeProgressRow): Promise<void> {
  const now = ports.clock.now();
  const why = run.state === 'waiting_for_approval' ? 'the owner had not answered the approval' : 'the sign-in had not happened';
  const summary = `${await reportOf(ports, run, progress.nextStep)}\nStopped: the recipe's 15-minute limit passed while ${why}.`;
  const [ended] = await ports.db.batch([
    ...fenceRunStatements(ports.db, { runId: run.id }, { reason: 'recipe_limit', endState: 'partial', summary, now }),
    ports.db
      .update(recipeProgress)
      .set({ outcome: 'partial', updatedAt: now })
      .where(and(eq(recipeProgress.runId, run.id), isNull(recipeProgress.outcome))),
  ]);
  if (rowsChanged(ended) !== 1) return;
  await recordRecipeEvent(ports, run.id, null, 'ended', `Ended partial: the 15-minute limit passed while ${why}.`);
  await releaseEpisodesOf(ports, run.id);
}
