import { and, eq, isNull } from 'drizzle-orm';
import type { ProposeBody } from '../../shared/api.ts';
import type { Observation } from '../../shared/observation.ts';
import { conditionStatus, readPredicate } from '../../shared/predicate-evaluation.ts';
import { MAX_RECIPE_CALLS, type RecipeBody, type RecipeStep, withFields } from '../../shared/recipes.ts';
import type { Principal } from '../auth/principal.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type RecipeProgressRow, type RunRow, recipeProgress, runs, type ToolCallRow } from '../db/schema.ts';
import type { Deadline } from '../deadline.ts';
import { DomainError } from '../domain-error.ts';
import { enterProposal } from '../pipeline/agent-entry.ts';
import type { Ports } from '../ports.ts';
import { expireIfPastDeadline, reportRun } from '../runs/lifecycle.ts';
import { noteRecipeEnd, progressOf, recordRecipeEvent } from './progress.ts';
import { refusalOutcome } from './refusals.ts';
import { reportOf } from './report.ts';
import { describePredicate } from './wording.ts';

/** How a drive ended: another driver holds the run, it parked (approval, sign-in), it ended, the next drive goes on, or no recipe is bound. */
export type DriveOutcome = 'busy' | 'parked' | 'ended' | 'later' | 'not_bound';

/** What a step's act came to: the step is done, to be executed again from a fresh read, or the drive stops. */
export type ActOutcome = 'done' | 'again' | 'parked' | 'ended' | 'later';

/** A fresh read of the page: the observation and the call that made it, or why there is none. */
export type FreshRead = { readonly observation: Observation; readonly callId: string } | { readonly stop: 'parked' | 'ended' | 'later' };

/** What a drive stops for within a step: thrown through the step's code, caught by the drive. */
export class DriveStop extends Error {
  constructor(readonly outcome: DriveOutcome) {
    super(outcome);
  }
}

/** The principal a bound run's calls are proposed as: the recipe and version, for the owner's record. */
export function runnerPrincipal(run: Pick<RunRow, 'recipeId' | 'recipeVersion' | 'ownerId'>): Principal {
  return { id: `recipe:${run.recipeId}@${run.recipeVersion}`, kind: 'recipe_runner', ownerId: run.ownerId };
}

/**
 * The state one drive of one bound run reads and writes (issue 19): the run, its progress, the
 * recipe and the owner's fields, with the few operations every part of the drive uses: reading
 * them again, writing progress while holding the driver slot, recording a timeline event,
 * proposing a read, recognising a step done, and ending the run with its report.
 */
export class DriveContext {
  run!: RunRow;
  progress!: RecipeProgressRow;
  recipe!: RecipeBody;
  /** The owner's fields from the run's first trusted message. */
  fields: Readonly<Record<string, string>> = {};

  constructor(
    readonly ports: Ports,
    readonly runId: string,
    /** The driver slot's token (`rdr_...`) this drive took. */
    private readonly token: string,
    /** When the drive stops starting new calls. */
    readonly budget: Deadline,
  ) {}

  principal(): Principal {
    return runnerPrincipal(this.run);
  }

  /** Step `index` with the owner's fields filled into its expected state and postcondition. */
  stepOf(index: number): RecipeStep {
    const step = this.recipe.steps[index]!;
    return { ...step, expect: withFields(step.expect, this.fields), postcondition: withFields(step.postcondition, this.fields) };
  }

  /**
   * Reads the run (ended first when past its deadline) and its progress.
   * @throws DriveStop('not_bound') when either is gone or no recipe is bound.
   */
  async load(): Promise<void> {
    const run = await this.ports.db.select().from(runs).where(eq(runs.id, this.runId)).get();
    const progress = await progressOf(this.ports, this.runId);
    if (!run || !progress || run.recipeId === null || run.recipeVersion === null) throw new DriveStop('not_bound');
    this.run = await expireIfPastDeadline(this.ports, run);
    this.progress = progress;
  }

  /**
   * Writes progress, only while this drive holds the run's driver slot (a conditional update).
   * @throws DriveStop('busy') when another driver took the slot.
   */
  async save(change: Partial<RecipeProgressRow>): Promise<void> {
    const written = await this.ports.db
      .update(recipeProgress)
      .set({ ...change, updatedAt: this.ports.clock.now() })
      .where(and(eq(recipeProgress.runId, this.runId), eq(recipeProgress.driverToken, this.token)))
      .run();
    if (rowsChanged(written) !== 1) throw new DriveStop('busy');
    this.progress = { ...this.progress, ...change };
  }

  /** Records one timeline event of the run (`step` 0-based, null for the run as a whole). */
  event(step: number | null, kind: Parameters<typeof recordRecipeEvent>[3], summary: string, detail?: Parameters<typeof recordRecipeEvent>[5]) {
    return recordRecipeEvent(this.ports, this.runId, step, kind, summary, detail);
  }

  /**
   * Proposes one read (`browser.observe`, `browser.navigate`) as the run's recipe runner through
   * the agent entry (admission, envelope, pipeline), counting it against the 64 calls first.
   * @returns the stored call; a refusal goes by the refusal table, which ends or stops the drive.
   */
  async proposeRead(index: number, body: ProposeBody): Promise<ToolCallRow> {
    if (this.progress.calls >= MAX_RECIPE_CALLS) return this.end('partial', `the recipe's limit of ${MAX_RECIPE_CALLS} calls was reached at step ${index + 1}`);
    await this.save({ calls: this.progress.calls + 1 });
    try {
      return (await enterProposal(this.ports, this.principal(), this.runId, body)).call;
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      await this.event(index, 'call', `${body.tool} was refused: ${error.code}: ${error.message}`, { evidence: { code: error.code, tool: body.tool } });
      const outcome = refusalOutcome(error, 'read');
      switch (outcome) {
        case 'ended':
        case 'later':
          throw new DriveStop(outcome);
        case 'failed':
          return this.end('failed', `the run's profile was revoked (${error.message})`);
        case 'uncertain':
          return this.end('uncertain', `step ${index + 1}: ${error.message}`);
        default:
          return this.end('partial', `step ${index + 1}: ${body.tool} was refused (${error.code}: ${error.message})`);
      }
    }
  }

  /**
   * Whether `observation` shows step `index` took effect: its postcondition is satisfied, or the
   * next step's expected state is visible. When it is, the step's progress is persisted.
   */
  async provenBy(index: number, observation: Observation, callId: string): Promise<boolean> {
    const step = this.stepOf(index);
    const status = conditionStatus(step.postcondition, observation);
    const next = index + 1 < this.recipe.steps.length ? this.stepOf(index + 1) : undefined;
    const nextVisible = next !== undefined && readPredicate(next.expect, observation).matched;
    if (status !== 'satisfied' && !nextVisible) return false;
    await this.event(
      index,
      'already_done',
      status === 'satisfied'
        ? `Step ${index + 1} is done: its postcondition (${describePredicate(step.postcondition.success)}) is on the page; nothing is sent again.`
        : `Step ${index + 1} is done: the next step's expected state (${describePredicate(next!.expect)}) is on the page; nothing is sent again.`,
      { toolCallId: callId, evidence: { postcondition: status, next_expected_state: nextVisible, url: observation.url, revision: observation.revision } },
    );
    await this.stepDone(index);
    return true;
  }

  /** Persists step `index` as done: the next step begins clean. */
  async stepDone(index: number): Promise<void> {
    await this.save({ nextStep: index + 1, pendingCallId: null, actSince: null, returned: false });
  }

  /** Records how a run that ended without this drive (cancelled, past its deadline, reported) ended. */
  async noteEnded(): Promise<DriveOutcome> {
    await noteRecipeEnd(this.ports, this.run);
    return 'ended';
  }

  /**
   * Ends the run with the tool-free final report written from the recorded evidence (ADR-0164
   * part 5): what was done, what is uncertain, and why it stopped.
   * @throws DriveStop('ended') always once the run ended; DriveStop('later') while a call is in flight.
   */
  async end(status: 'completed' | 'partial' | 'uncertain' | 'failed', why: string | undefined): Promise<never> {
    await this.load();
    const summary = `${await reportOf(this.ports, this.run, this.progress.nextStep, this.recipe)}${why === undefined ? '' : `\nStopped: ${why}.`}`;
    try {
      await reportRun(this.ports, this.principal(), this.run, { status, summary });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      if (error.code === 'call_in_progress') throw new DriveStop('later');
      // It ended meanwhile (cancelled, past its deadline): that is its outcome.
      await this.load();
      await this.noteEnded();
      throw new DriveStop('ended');
    }
    await this.ports.db
      .update(recipeProgress)
      .set({ outcome: status, updatedAt: this.ports.clock.now() })
      .where(and(eq(recipeProgress.runId, this.runId), isNull(recipeProgress.outcome)));
    await this.event(null, 'ended', `Ended ${status}: ${summary}`);
    throw new DriveStop('ended');
  }
}
