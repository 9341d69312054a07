import { and, desc, eq, gte, inArray, isNull, lt, or } from 'drizzle-orm';
import { type ProposeBody, TERMINAL_RUN_STATES } from '../../shared/api.ts';
import { type AriaNode, parseAriaSnapshot, walkReachable } from '../../shared/aria-snapshot.ts';
import { Observation } from '../../shared/observation.ts';
import { withinOrigins } from '../../shared/origin.ts';
import type { Predicate } from '../../shared/predicate.ts';
import { conditionStatus, readPredicate } from '../../shared/predicate-evaluation.ts';
import { MAX_RECIPE_CALLS, MAX_RECIPE_STEPS, type RecipeBody, type RecipeStep, type RecipeTarget, type RecipeValue, withFields } from '../../shared/recipes.ts';
import { CURRENT_TOOL_VERSION } from '../../shared/tools.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { messages, type RecipeProgressRow, type RunRow, recipeProgress, runs, signInEpisodes, signInWaits, type ToolCallRow, toolCalls } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { settleIfLost } from '../pipeline/lost-dispatch.ts';
import { proposeOnRun } from '../pipeline/propose.ts';
import type { Ports } from '../ports.ts';
import { fenceRunStatements } from '../runs/fence.ts';
import { expireIfPastDeadline, reportRun } from '../runs/lifecycle.ts';
import { boundRecipe } from './catalog.ts';
import { eventsOf, progressOf, recordRecipeEvent } from './progress.ts';

/**
 * The recipe runner (issue 19, ADR-0164 part 5, DESIGN.md section 9): advances a recipe-bound run
 * one step at a time, each step from a fresh observation, each action one ordinary tool call
 * through the whole pipeline (validation, the owner's authority, policy, approval or grant,
 * watermark, settle, postcondition), proposed as the run's only principal. It runs inside the
 * edge: on Workers in `ctx.waitUntil` after the request that created, approved or resumed the run
 * and in the cron pass; on Node and Deno the same code in-process.
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

/** How a drive ended. */
export type DriveOutcome = 'busy' | 'parked' | 'ended' | 'later' | 'not_bound';

/** The principal a bound run's calls are proposed as: the recipe and version, for the owner's record. */
export function runnerPrincipal(run: Pick<RunRow, 'recipeId' | 'recipeVersion' | 'ownerId'>): Principal {
  return { id: `recipe:${run.recipeId}@${run.recipeVersion}`, kind: 'recipe_runner', ownerId: run.ownerId };
}

/**
 * Hands a drive of each bound run among `runIds` to `ports.background` (after the request that
 * created, approved or resumed them answered). Runs no recipe is bound to are left alone.
 */
export async function kickRecipeRuns(ports: Ports, runIds: readonly string[]): Promise<void> {
  if (runIds.length === 0) return;
  const bound = await ports.db
    .select({ runId: recipeProgress.runId })
    .from(recipeProgress)
    .where(and(inArray(recipeProgress.runId, [...runIds].slice(0, 90)), isNull(recipeProgress.outcome)));
  for (const { runId } of bound) ports.background(`the recipe run ${runId}`, () => driveRecipeRun(ports, runId));
}

/** Most bound runs one cron pass drives. */
const RUNS_PER_PASS = 8;

/**
 * The cron pass's part (edge/cron-pass.ts): ends bound runs parked past the run's deadline
 * (`deadline_exceeded`) or past the recipe's 15 minutes (`partial`), with their approval cancelled
 * and their sign-in wait fenced, then
 * drives up to 8 bound runs that are running or queued and held by no driver.
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
    .set({ driverToken: token, driverUntil: now + budgetMs + ports.config.toolDeadlineMs + 10_000 })
    .where(and(eq(recipeProgress.runId, runId), isNull(recipeProgress.outcome), or(isNull(recipeProgress.driverUntil), lt(recipeProgress.driverUntil, now))))
    .run();
  if (rowsChanged(taken) !== 1) return (await progressOf(ports, runId)) ? 'busy' : 'not_bound';
  const drive = new RecipeDrive(ports, runId, token, now + budgetMs);
  try {
    return await drive.go();
  } finally {
    await ports.db
      .update(recipeProgress)
      .set({ driverToken: null, driverUntil: null })
      .where(and(eq(recipeProgress.runId, runId), eq(recipeProgress.driverToken, token)));
  }
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

/** Ends a bound run parked past its 15-minute limit: `partial`, its parked approval cancelled and its sign-in wait fenced, in one batch. */
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
  if (rowsChanged(ended) === 1) await recordRecipeEvent(ports, run.id, null, 'ended', `Ended partial: the 15-minute limit passed while ${why}.`);
}

/** A fresh read of the page: the observation, or why there is none. */
type FreshRead = { readonly observation: Observation; readonly callId: string } | { readonly stop: 'parked' | 'ended' | 'later' };

/** What a step's act came to. */
type ActOutcome = 'done' | 'again' | 'parked' | 'ended' | 'later';

/** What a drive stops for within a step. */
class DriveStop extends Error {
  constructor(readonly outcome: DriveOutcome) {
    super(outcome);
  }
}

/** One drive of one bound run: the state it reads and the steps it takes. */
class RecipeDrive {
  private run!: RunRow;
  private progress!: RecipeProgressRow;
  private recipe!: RecipeBody;
  private fields: Readonly<Record<string, string>> = {};
  private readonly principal: () => Principal = () => runnerPrincipal(this.run);

  constructor(
    private readonly ports: Ports,
    private readonly runId: string,
    private readonly token: string,
    private readonly budgetEndsAt: number,
  ) {}

  async go(): Promise<DriveOutcome> {
    try {
      await this.load();
      this.recipe = (await boundRecipe(this.ports, this.run.recipeId!, this.run.recipeVersion!)).body;
      const first = await this.ports.db
        .select({ fields: messages.fields })
        .from(messages)
        .where(and(eq(messages.runId, this.runId), eq(messages.trust, 'trusted')))
        .orderBy(messages.createdAt)
        .limit(1)
        .get();
      this.fields = first?.fields ?? {};
      if (this.progress.stepsBegun === 0 && this.progress.calls === 0 && (await eventsOf(this.ports, this.runId)).length === 0) {
        await this.event(
          null,
          'bound',
          `Bound to the reviewed recipe ${this.run.recipeId} version ${this.run.recipeVersion} (${this.recipe.steps.length} steps).`,
          {
            evidence: { recipe: this.run.recipeId, version: this.run.recipeVersion, hash: this.run.recipeHash },
          },
        );
      }
      for (;;) {
        await this.load();
        if ((TERMINAL_RUN_STATES as readonly string[]).includes(this.run.state)) return await this.noteEnded();
        if (this.run.state === 'waiting_for_approval' || this.run.state === 'waiting_for_authentication') return 'parked';
        if (this.ports.clock.now() >= this.progress.endsBy) return await this.end('partial', "the recipe's 15-minute limit was reached");
        if (this.ports.clock.now() >= this.budgetEndsAt) return 'later';
        if (this.progress.pendingCallId !== null || this.progress.actSince !== null) {
          const settled = await this.settlePending();
          if (settled !== undefined) return settled;
          continue;
        }
        if (this.progress.nextStep >= this.recipe.steps.length) return await this.end('completed', undefined);
        const outcome = await this.executeStep(this.progress.nextStep);
        if (outcome !== undefined) return outcome;
      }
    } catch (error) {
      if (!(error instanceof DriveStop)) throw error;
      if (error.outcome === 'ended') {
        // The run ended under this drive (cancelled, past its deadline): record how, once.
        await this.load().catch(() => undefined);
        if (this.run !== undefined && (TERMINAL_RUN_STATES as readonly string[]).includes(this.run.state)) await this.noteEnded();
      }
      return error.outcome;
    }
  }

  /** Step `index` with the owner's fields filled into its expected state and postcondition. */
  private stepOf(index: number): RecipeStep {
    const step = this.recipe.steps[index]!;
    return { ...step, expect: withFields(step.expect, this.fields), postcondition: withFields(step.postcondition, this.fields) };
  }

  /** Reads the run (ended first when past its deadline) and its progress. */
  private async load(): Promise<void> {
    const run = await this.ports.db.select().from(runs).where(eq(runs.id, this.runId)).get();
    const progress = await progressOf(this.ports, this.runId);
    if (!run || !progress || run.recipeId === null || run.recipeVersion === null) throw new DriveStop('not_bound');
    this.run = await expireIfPastDeadline(this.ports, run);
    this.progress = progress;
  }

  /** Writes progress, only while this drive holds the run's driver slot. */
  private async save(change: Partial<RecipeProgressRow>): Promise<void> {
    const written = await this.ports.db
      .update(recipeProgress)
      .set({ ...change, updatedAt: this.ports.clock.now() })
      .where(and(eq(recipeProgress.runId, this.runId), eq(recipeProgress.driverToken, this.token)))
      .run();
    if (rowsChanged(written) !== 1) throw new DriveStop('busy');
    this.progress = { ...this.progress, ...change };
  }

  private event(step: number | null, kind: Parameters<typeof recordRecipeEvent>[3], summary: string, detail?: Parameters<typeof recordRecipeEvent>[5]) {
    return recordRecipeEvent(this.ports, this.runId, step, kind, summary, detail);
  }

  /**
   * One execution of step `index` from a fresh read: the expected state must be visible, then the
   * target is selected and acted on. Undefined when the drive goes on (the step is done, or it is
   * to be executed again), else why the drive stops.
   */
  private async executeStep(index: number): Promise<DriveOutcome | undefined> {
    const step = this.stepOf(index);
    let read = await this.freshRead(index);
    if ('stop' in read) return read.stop;
    let selected: { reference: string; observation: Observation } | undefined;
    const acted = await this.actsOf(index);
    for (let attempt = 0; selected === undefined; attempt++) {
      // This step acted before (a resumption, a lost answer): evidence that it took effect comes first.
      if (acted.sent && (await this.provenBy(index, read.observation, read.callId))) return undefined;
      if (acted.unproven !== undefined) {
        // A write whose outcome is unknown is never sent again: only evidence could move the run on.
        await this.event(index, 'stopped', `Step ${index + 1}: no evidence that its earlier act took effect; it is never sent again.`, {
          toolCallId: read.callId,
          evidence: { unproven_call: acted.unproven, url: read.observation.url, revision: read.observation.revision },
        });
        return this.end(
          'uncertain',
          `step ${index + 1} ("${step.title}") was sent (${acted.unproven}) but its outcome is uncertain: the fresh read shows neither its postcondition nor the next step's expected state; it was not sent again`,
        );
      }
      const expected = readPredicate(step.expect, read.observation);
      // Several candidates for the expected state are ambiguous evidence: like an ambiguous target, back to observation.
      if (!expected.matched && expected.candidates <= 1) {
        await this.event(index, 'stopped', `The expected state of step ${index + 1} is not on the page: ${describePredicate(step.expect)}.`, {
          toolCallId: read.callId,
          evidence: { expect: step.expect, candidates: expected.candidates, url: read.observation.url, revision: read.observation.revision },
        });
        return this.end('partial', `step ${index + 1} ("${step.title}") found the page not in its expected state (${describePredicate(step.expect)})`);
      }
      const candidates = expected.matched ? targetsOf(read.observation, step.target) : [];
      if (expected.matched) {
        await this.event(index, 'expected_state_visible', `Step ${index + 1}: ${describePredicate(step.expect)} is on the page.`, {
          toolCallId: read.callId,
          evidence: { expect: step.expect, candidates: expected.candidates, url: read.observation.url, revision: read.observation.revision },
        });
      }
      if (candidates.length === 1) {
        selected = { reference: candidates[0]!, observation: read.observation };
        await this.event(
          index,
          'target_selected',
          `Step ${index + 1}: the ${step.target.role} "${step.target.name}" is ${candidates[0]} of revision ${read.observation.revision}.`,
          {
            toolCallId: read.callId,
            evidence: { target: step.target, reference: candidates[0], revision: read.observation.revision, candidates: 1 },
          },
        );
        break;
      }
      const ambiguity = expected.matched
        ? `${candidates.length} elements are the ${step.target.role} "${step.target.name}"`
        : `${expected.candidates} elements are ${describePredicate(step.expect)}`;
      await this.event(index, 'target_ambiguous', `Step ${index + 1}: ${ambiguity}; returning to observation.`, {
        toolCallId: read.callId,
        evidence: { target: step.target, candidates: candidates.length, expect_candidates: expected.candidates, revision: read.observation.revision },
      });
      if (attempt >= 1)
        return this.end('partial', `step ${index + 1} ("${step.title}") could not tell which ${step.target.role} "${step.target.name}" to use (${ambiguity})`);
      read = await this.freshRead(index);
      if ('stop' in read) return read.stop;
    }
    // A step execution is an act begun: reads that found nothing to act on (a host away) are bounded by the 64 calls.
    if (this.progress.stepsBegun >= MAX_RECIPE_STEPS) {
      return this.end('partial', `the recipe's limit of ${MAX_RECIPE_STEPS} step executions was reached before step ${index + 1} could be executed`);
    }
    await this.save({ stepsBegun: this.progress.stepsBegun + 1 });
    const outcome = await this.act(index, step, selected.reference, selected.observation.revision);
    switch (outcome) {
      case 'done':
      case 'again':
        return undefined;
      default:
        return outcome;
    }
  }

  /**
   * A fresh read for step `index`: an observation, or, when the browser shows no page of the
   * recipe's origin (a new lease after a sign-in, a restarted host), a navigation to the page the
   * sign-in protected or to the recipe's start page; both are ordinary calls.
   */
  private async freshRead(index: number): Promise<FreshRead> {
    const onOrigin = this.run.latestRevision !== null && this.run.latestUrl !== null && withinOrigins(this.run.latestUrl, [this.recipe.origin]);
    const navigate = async (): Promise<ProposeBody> => ({
      tool: 'browser.navigate',
      version: CURRENT_TOOL_VERSION,
      arguments: { url: await this.navigationTarget() },
    });
    let navigated = !onOrigin;
    let call = await this.propose(index, onOrigin ? { tool: 'browser.observe', version: CURRENT_TOOL_VERSION, arguments: {} } : await navigate());
    for (;;) {
      await this.load();
      if (this.run.state === 'waiting_for_authentication') {
        await this.event(
          index,
          'waiting_for_sign_in',
          `Step ${index + 1}: the page asks for sign-in; the run waits for the owner and resumes from this step.`,
          {
            toolCallId: call.id,
          },
        );
        return { stop: 'parked' };
      }
      const observation = call.state === 'succeeded' ? Observation.safeParse(call.result) : undefined;
      if (observation?.success) {
        const { url, revision } = observation.data;
        await this.event(index, 'observed', `${call.tool === 'browser.navigate' ? 'Opened' : 'Read'} ${url} (revision ${revision}).`, {
          toolCallId: call.id,
          evidence: { url, revision, tool: call.tool },
        });
        return { observation: observation.data, callId: call.id };
      }
      const code = call.errorCode;
      await this.event(index, 'observed', `The read failed: ${code ?? call.state}${call.errorMessage ? `: ${call.errorMessage}` : ''}`, {
        toolCallId: call.id,
        evidence: { code, state: call.state, tool: call.tool },
      });
      if (!navigated && (code === 'page_changed' || code === 'outside_run_origins' || code === 'lease_lost')) {
        // The browser shows no page of the recipe's (a restarted host, a page that went elsewhere).
        navigated = true;
        call = await this.propose(index, await navigate());
        continue;
      }
      // The site's own page cannot be had (a redirect away, a load that failed): the run stops
      // with that evidence instead of trying again until its deadline.
      if (code === 'outside_run_origins' || code === 'policy_denied' || (call.tool === 'browser.navigate' && code === 'navigation_failed')) {
        return { stop: await this.end('partial', `step ${index + 1} could not read a page of ${this.recipe.origin} (${code})`) };
      }
      // The host is away or busy: the next drive reads again (every read counts against the 64 calls).
      return { stop: 'later' };
    }
  }

  /**
   * Where a read goes when the browser shows no page of the recipe's origin: the page the run's
   * latest resolved sign-in protected (a resumption; ADR-0164 part 3), when it is on the recipe's
   * origin; else the recipe's start page.
   */
  private async navigationTarget(): Promise<string> {
    const resolved = await this.ports.db
      .select({ waitId: signInWaits.id, protectedUrl: signInEpisodes.protectedUrl })
      .from(signInWaits)
      .innerJoin(signInEpisodes, eq(signInEpisodes.id, signInWaits.episodeId))
      .where(and(eq(signInWaits.runId, this.runId), eq(signInWaits.state, 'resolved')))
      .orderBy(desc(signInWaits.createdAt))
      .limit(1)
      .get();
    const start = `${this.recipe.origin}${this.recipe.start_path}`;
    if (!resolved) return start;
    if (this.progress.resumedWaitId !== resolved.waitId) {
      await this.save({ resumedWaitId: resolved.waitId });
      await this.event(null, 'resumed', `Resumed at step ${this.progress.nextStep + 1} after the owner's verified sign-in, with a fresh lease and read.`, {
        evidence: { wait_id: resolved.waitId, protected_url: resolved.protectedUrl, step: this.progress.nextStep },
      });
    }
    return withinOrigins(resolved.protectedUrl, [this.recipe.origin]) ? resolved.protectedUrl : start;
  }

  /**
   * Proposes one ordinary call as the run's recipe runner, counting it against the 64 calls first.
   * @returns the stored call (a refusal that ends the run, or a limit, stops the drive instead).
   */
  private async propose(index: number, body: ProposeBody): Promise<ToolCallRow> {
    if (this.progress.calls >= MAX_RECIPE_CALLS) return this.end('partial', `the recipe's limit of ${MAX_RECIPE_CALLS} calls was reached at step ${index + 1}`);
    await this.save({ calls: this.progress.calls + 1 });
    try {
      const outcome = await proposeOnRun(this.ports, this.principal(), this.runId, body);
      return outcome.call;
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      await this.event(index, 'call', `${body.tool} was refused: ${error.code}: ${error.message}`, { evidence: { code: error.code, tool: body.tool } });
      switch (error.code) {
        case 'run_not_active':
        case 'forbidden':
        case 'not_found':
          throw new DriveStop('ended');
        case 'profile_revoked':
          return this.end('failed', `the run's profile was revoked (${error.message})`);
        case 'profile_in_use':
        case 'quota_exceeded':
        case 'rate_limited':
        case 'call_in_progress':
          throw new DriveStop('later');
        case 'outcome_unknown':
          return this.end('uncertain', `step ${index + 1}: ${error.message}`);
        default:
          return this.end('partial', `step ${index + 1}: ${body.tool} was refused (${error.code}: ${error.message})`);
      }
    }
  }

  /**
   * The acts step `index` already sent in this run: whether any was, and the last one, whose
   * effect may have happened. Sent and not proven is never sent again, whatever answered it: a
   * sign-in wall after a submit can follow a write the site accepted as well as one it refused,
   * so after the sign-in only evidence moves the step on (ADR-0164: no duplicate effects after
   * resumption).
   */
  private async actsOf(index: number): Promise<{ sent: boolean; unproven: string | undefined }> {
    const sent = (await eventsOf(this.ports, this.runId)).filter(
      (event) =>
        event.step === index && event.kind === 'call' && event.toolCallId !== null && event.evidence.tool === 'browser.act' && event.evidence.sent === true,
    );
    return { sent: sent.length > 0, unproven: sent.at(-1)?.toolCallId ?? undefined };
  }

  /**
   * Whether `observation` shows step `index` took effect: its postcondition is satisfied, or the
   * next step's expected state is visible. When it is, the step's progress is persisted.
   */
  private async provenBy(index: number, observation: Observation, callId: string): Promise<boolean> {
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

  private async stepDone(index: number): Promise<void> {
    await this.save({ nextStep: index + 1, pendingCallId: null, actSince: null, returned: false });
  }

  /** Proposes step `index`'s act on `reference` of `revision`, then judges its call. */
  private async act(index: number, step: RecipeStep, reference: string, revision: number): Promise<ActOutcome> {
    const value = (source: RecipeValue) => ('text' in source ? source.text : (this.fields[source.field] ?? ''));
    const action = step.action;
    const target = { reference, revision, postcondition: step.postcondition };
    const args: Record<string, unknown> =
      action.kind === 'type'
        ? { action: 'type', ...target, text: value(action.value), ...(action.submit !== undefined ? { submit: action.submit } : {}) }
        : action.kind === 'select'
          ? { action: 'select', ...target, value: value(action.value) }
          : action.kind === 'press'
            ? { action: 'press', ...target, key: action.key }
            : action.kind === 'scroll'
              ? { action: 'scroll', ...target, delta: action.delta }
              : { action: action.kind, ...target };
    if (this.progress.calls >= MAX_RECIPE_CALLS) return this.end('partial', `the recipe's limit of ${MAX_RECIPE_CALLS} calls was reached at step ${index + 1}`);
    // Counted, and marked, before the proposal: a driver that dies in between leaves the mark, and
    // the next one looks for this act's call instead of acting again.
    await this.save({ calls: this.progress.calls + 1, actSince: this.ports.clock.now() });
    let call: ToolCallRow;
    try {
      call = (await proposeOnRun(this.ports, this.principal(), this.runId, { tool: 'browser.act', version: CURRENT_TOOL_VERSION, arguments: args })).call;
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      // Refused before anything was stored as dispatched: nothing was sent.
      await this.save({ actSince: null });
      return this.actRefused(index, error);
    }
    await this.save({ pendingCallId: call.id, actSince: null });
    return this.judge(index, call);
  }

  /** An act the pipeline refused before dispatch: a stale page or an inert target returns to observation once; policy ends the run. */
  private async actRefused(index: number, error: DomainError): Promise<ActOutcome> {
    await this.event(index, 'call', `The act of step ${index + 1} was refused before dispatch: ${error.code}: ${error.message}`, {
      evidence: { code: error.code, tool: 'browser.act', sent: false },
    });
    switch (error.code) {
      case 'stale_revision':
      case 'not_actionable':
      case 'invalid_arguments':
        if (this.progress.returned) return this.end('partial', `step ${index + 1}: the act was refused twice (${error.code}); nothing was sent`);
        await this.save({ returned: true });
        await this.event(index, 'returned_to_observation', `Step ${index + 1} returns to observation (nothing was sent).`);
        return 'again';
      case 'policy_denied':
        return this.end('partial', `step ${index + 1}: policy denies its act (${error.message})`);
      case 'outcome_unknown':
        return this.end('uncertain', `step ${index + 1}: ${error.message}`);
      case 'run_not_active':
      case 'forbidden':
      case 'not_found':
        throw new DriveStop('ended');
      case 'profile_in_use':
      case 'quota_exceeded':
      case 'rate_limited':
      case 'call_in_progress':
        throw new DriveStop('later');
      default:
        return this.end('failed', `step ${index + 1}: ${error.code}: ${error.message}`);
    }
  }

  /** The call of a step whose outcome this drive did not see (approved later, or left by a dead driver). */
  private async settlePending(): Promise<DriveOutcome | undefined> {
    const index = this.progress.nextStep;
    let call: ToolCallRow | undefined;
    if (this.progress.pendingCallId !== null) {
      call = await this.ports.db.select().from(toolCalls).where(eq(toolCalls.id, this.progress.pendingCallId)).get();
    } else if (this.progress.actSince !== null) {
      call = await this.ports.db
        .select()
        .from(toolCalls)
        .where(
          and(
            eq(toolCalls.runId, this.runId),
            eq(toolCalls.principalId, this.principal().id),
            eq(toolCalls.tool, 'browser.act'),
            gte(toolCalls.createdAt, this.progress.actSince),
          ),
        )
        .orderBy(desc(toolCalls.createdAt))
        .limit(1)
        .get();
      if (call === undefined) {
        // The proposal stored nothing: nothing was dispatched, the step begins again.
        await this.save({ actSince: null });
        return undefined;
      }
      await this.save({ pendingCallId: call.id, actSince: null });
    }
    if (call === undefined) {
      await this.save({ pendingCallId: null, actSince: null });
      return undefined;
    }
    if (call.state === 'dispatching') {
      // Being dispatched in another request (an approval), whose kick comes back here; one a
      // crashed edge abandoned is settled as the pipeline settles it (uncertain for a write).
      await settleIfLost(this.ports, call);
      call = (await this.ports.db.select().from(toolCalls).where(eq(toolCalls.id, call.id)).get()) ?? call;
      if (call.state === 'dispatching') return 'later';
    }
    const outcome = await this.judge(index, call);
    return outcome === 'done' || outcome === 'again' ? undefined : outcome;
  }

  /**
   * Judges a step's act by its stored call (ADR-0164 part 5): satisfied proves the step; a parked
   * call waits; a call the host never carried out is tried once more from a fresh read; anything
   * else returns to observation, and only evidence moves the run on. A write is never sent again.
   */
  private async judge(index: number, call: ToolCallRow): Promise<ActOutcome> {
    const step = this.stepOf(index);
    const status = (call.phases as { postcondition?: { status?: string } }).postcondition?.status;
    const sent = call.state === 'succeeded' || call.state === 'uncertain' || call.state === 'dispatching';
    await this.load();
    const wall = call.state === 'succeeded' && this.run.state === 'waiting_for_authentication';
    const already = (await eventsOf(this.ports, this.runId)).some((event) => event.toolCallId === call.id && event.kind === 'call');
    if (!already && call.state !== 'waiting_for_approval') {
      await this.event(
        index,
        'call',
        `Step ${index + 1}: ${describeAction(step)} → ${call.state}${wall ? ', answered by a sign-in wall' : status ? ` (postcondition ${status})` : ''}.`,
        {
          toolCallId: call.id,
          evidence: { tool: call.tool, state: call.state, postcondition: status ?? null, code: call.errorCode, sent, ...(wall ? { sign_in_wall: true } : {}) },
        },
      );
    }
    switch (call.state) {
      case 'waiting_for_approval':
        if (!(await eventsOf(this.ports, this.runId)).some((event) => event.toolCallId === call.id && event.kind === 'waiting_for_approval')) {
          await this.event(index, 'waiting_for_approval', `Step ${index + 1} waits for the owner's approval, as policy asks.`, { toolCallId: call.id });
        }
        return 'parked';
      case 'dispatching':
        return 'later';
      case 'cancelled':
        throw new DriveStop('ended');
      case 'denied':
      case 'rejected':
        await this.save({ pendingCallId: null });
        await this.end('partial', `step ${index + 1} ("${step.title}") was not carried out: ${call.errorMessage ?? call.state}`);
        return 'ended';
      case 'failed': {
        // The host guarantees a failed write was not carried out: one more try from a fresh read.
        await this.save({ pendingCallId: null });
        if (this.run.state === 'waiting_for_authentication') return this.parkedForSignIn(index, call);
        if (this.progress.returned) {
          await this.end('partial', `step ${index + 1} ("${step.title}") failed twice without being carried out (${call.errorCode})`);
          return 'ended';
        }
        await this.save({ returned: true });
        await this.event(index, 'returned_to_observation', `Step ${index + 1} returns to observation: the act was not carried out (${call.errorCode}).`, {
          toolCallId: call.id,
        });
        return 'again';
      }
      case 'succeeded':
        if (this.run.state === 'waiting_for_authentication') {
          await this.save({ pendingCallId: null });
          return this.parkedForSignIn(index, call);
        }
        if (status === 'satisfied') {
          await this.event(index, 'step_done', `Step ${index + 1} is done: ${describePredicate(step.postcondition.success)} (postcondition satisfied).`, {
            toolCallId: call.id,
            evidence: { postcondition: status },
          });
          await this.stepDone(index);
          return 'done';
        }
        return this.returnToObservation(index, call, status === 'failure_observed' ? 'partial' : 'uncertain');
      case 'uncertain':
        return this.returnToObservation(index, call, 'uncertain');
    }
  }

  private async parkedForSignIn(index: number, call: ToolCallRow): Promise<ActOutcome> {
    await this.event(
      index,
      'waiting_for_sign_in',
      `Step ${index + 1}: the page asks for sign-in; the run waits for the owner and resumes from step ${index + 1}.`,
      {
        toolCallId: call.id,
      },
    );
    return 'parked';
  }

  /**
   * After an unproven or uncertain act: one fresh read. Evidence that the step took effect moves
   * the run on; without it the run ends (`uncertain`: the write may have happened; `partial`: the
   * page showed the step's failure). The act is never sent again.
   */
  private async returnToObservation(index: number, call: ToolCallRow, otherwise: 'uncertain' | 'partial'): Promise<ActOutcome> {
    await this.save({ pendingCallId: null });
    await this.event(index, 'returned_to_observation', `Step ${index + 1} returns to observation: the act's outcome is not proven; it is never sent again.`, {
      toolCallId: call.id,
    });
    const read = await this.freshRead(index);
    if ('stop' in read) {
      if (read.stop === 'later') {
        // Nothing could be read now: the step stays unproven; the next drive reads again.
        await this.save({ pendingCallId: call.id });
      }
      return read.stop;
    }
    if (await this.provenBy(index, read.observation, read.callId)) return 'done';
    const step = this.stepOf(index);
    await this.event(index, 'stopped', `Step ${index + 1}: no evidence that "${step.title}" took effect.`, {
      toolCallId: read.callId,
      evidence: { postcondition: conditionStatus(step.postcondition, read.observation), url: read.observation.url, revision: read.observation.revision },
    });
    await this.end(
      otherwise,
      otherwise === 'uncertain'
        ? `step ${index + 1} ("${step.title}") was sent but its outcome is uncertain: the fresh read shows neither its postcondition nor the next step's expected state; it was not sent again`
        : `step ${index + 1} ("${step.title}"): the page showed the postcondition's failure`,
    );
    return 'ended';
  }

  /** Records how a run that ended without this drive (cancelled, past its deadline, reported) ended. */
  private async noteEnded(): Promise<DriveOutcome> {
    await noteRecipeEnd(this.ports, this.run);
    return 'ended';
  }

  /**
   * Ends the run with the tool-free final report written from the recorded evidence (ADR-0164
   * part 5): what was done, what is uncertain, and why it stopped.
   */
  private async end(status: 'completed' | 'partial' | 'uncertain' | 'failed', why: string | undefined): Promise<never> {
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

/**
 * The final report of a bound run, from its recorded evidence: each step done (and how it was
 * proven), the step it stopped at, and the calls that are uncertain.
 */
async function reportOf(ports: Ports, run: RunRow, nextStep: number, known?: RecipeBody): Promise<string> {
  const recipe = known ?? (await boundRecipe(ports, run.recipeId!, run.recipeVersion!)).body;
  const events = await eventsOf(ports, run.id);
  const lines = [`Reviewed recipe ${run.recipeId} v${run.recipeVersion}: ${Math.min(nextStep, recipe.steps.length)} of ${recipe.steps.length} steps done.`];
  recipe.steps.forEach((step, index) => {
    const proof = events.filter((event) => event.step === index && (event.kind === 'step_done' || event.kind === 'already_done')).at(-1);
    if (index < nextStep)
      lines.push(`${index + 1}. ${step.title}: done (${proof?.kind === 'already_done' ? 'seen done on a fresh read' : 'postcondition satisfied'}).`);
    else if (index === nextStep) {
      const uncertain = events.filter((event) => event.step === index && event.kind === 'call' && event.evidence.state === 'uncertain');
      lines.push(
        `${index + 1}. ${step.title}: not done${uncertain.length > 0 ? `; its act ${uncertain.map((event) => event.toolCallId).join(', ')} is uncertain and was not sent again` : ''}.`,
      );
    } else lines.push(`${index + 1}. ${step.title}: not begun.`);
  });
  return lines.join('\n');
}

/** The references of the reachable elements of `observation` with the target's role and exact name. */
export function targetsOf(observation: Pick<Observation, 'snapshot'>, target: RecipeTarget): string[] {
  const nodes: AriaNode[] = parseAriaSnapshot(observation.snapshot);
  const found: string[] = [];
  for (const node of walkReachable(nodes)) {
    if (node.role === target.role && node.name === target.name && node.ref !== undefined) found.push(node.ref);
  }
  return found;
}

/** A predicate in words, for the timeline and the report. */
export function describePredicate(predicate: Predicate): string {
  switch (predicate.kind) {
    case 'control':
      return `the ${predicate.role} "${predicate.name}"`;
    case 'text':
      return `the text "${predicate.text}"`;
    case 'region':
      return `the ${predicate.role} region "${predicate.name}"`;
    case 'location':
      return `the page ${predicate.url ?? predicate.path}`;
    case 'row':
      return `a row ${JSON.stringify(predicate.cells)} in the ${predicate.collection.role}${predicate.collection.name ? ` "${predicate.collection.name}"` : ''}`;
  }
}

function describeAction(step: RecipeStep): string {
  const target = `the ${step.target.role} "${step.target.name}"`;
  switch (step.action.kind) {
    case 'type':
      return `type into ${target}${step.action.submit ? ' and submit' : ''}`;
    case 'select':
      return `select in ${target}`;
    case 'press':
      return `press ${step.action.key} on ${target}`;
    case 'scroll':
      return `scroll ${target} by ${step.action.delta} px`;
    default:
      return `${step.action.kind} ${target}`;
  }
}
