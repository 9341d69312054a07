import { errors, type Page } from 'playwright-core';
import type { Deadline } from './deadline.ts';
import { firstLineOf, HostError } from './host-error.ts';

/** One step of a dispatch, run with what is left of the action's deadline. */
export type Step = () => Promise<unknown>;

/** A step and the words that name what it acts on in its errors ("click on e5", "fill_form field 2 (e9)"). */
export interface PlanStep {
  readonly about: string;
  readonly run: Step;
}

/**
 * An action as two phases. The input runs with `force`: the prechecks were the action's one
 * actionability pass, so Playwright does not wait for the same checks a second time.
 * `precheck` sends no input: Playwright's trial run of the same action
 * (its actionability checks: attached, visible, stable, enabled, receiving events) or, for the
 * actions Playwright has no trial for, the same element states checked directly. `input` sends
 * the action itself, step by step in order (a fill_form's fields, then its submit).
 */
export interface DispatchPlan {
  readonly precheck: readonly PlanStep[];
  readonly input: readonly PlanStep[];
}

/** What a plan is built with: the page and the Playwright timeout for each step, in ms. */
export interface PlanContext {
  readonly page: Page;
  readonly timeout: () => number;
}

/** A state the element must be in for the action (editable, enabled) that it is not in: `not_actionable`. */
export class NotActionable extends Error {}

/** An action that cannot apply to the element at all (a file for a button, `false` for a radio): `action_failed`. */
export class NotApplicable extends Error {}

/** All steps named `about`. */
export function stepsAbout(about: string, ...steps: Step[]): PlanStep[] {
  return steps.map((run) => ({ about, run }));
}

/** A step that fails {@link NotActionable} "element is not <state>" when `check` answers false. */
export function requireState(state: string, check: () => Promise<boolean>): Step {
  return async () => {
    if (!(await check())) throw new NotActionable(`element is not ${state}`);
  };
}

/**
 * Runs the plan's prechecks (see {@link DispatchPlan}) within `deadline`, the action's share
 * bounded by `actionabilityMs`. They send no input, so their failure, or the deadline passing
 * during them, means nothing was dispatched.
 * @throws HostError('not_actionable') when an element did not become able to take the input in
 *   time, with Playwright's reason (see {@link actionabilityReason});
 *   HostError('action_failed') when the action cannot apply to the element (checking a button,
 *   say); each message starts with the step's `about`.
 */
export async function runPrechecks(deadline: Deadline, plan: DispatchPlan): Promise<void> {
  for (const step of plan.precheck) {
    try {
      await deadline.race(step.run(), 'not_actionable', `${step.about}: the element did not become actionable in time; nothing was dispatched`);
    } catch (error) {
      if (error instanceof HostError) throw error;
      if (error instanceof errors.TimeoutError || error instanceof NotActionable) {
        throw new HostError('not_actionable', `${step.about}: ${actionabilityReason(error)}; nothing was dispatched`);
      }
      throw new HostError('action_failed', `${step.about}: ${firstLineOf(error)}; nothing was dispatched`);
    }
  }
}

/**
 * Sends the action's input, each step once, never retried. Any failure leaves the outcome
 * unknown: Playwright can time out or fail after its input reached the page (waiting for the page
 * to acknowledge it, or for a navigation it started), a blocked page never acknowledges at all,
 * and the steps before the failing one have run.
 * @throws HostError('outcome_unknown')
 */
export async function sendInput(deadline: Deadline, plan: DispatchPlan): Promise<void> {
  for (const step of plan.input) {
    try {
      await deadline.race(step.run(), 'outcome_unknown', `${step.about} ran out of time mid-dispatch; it may or may not have happened`);
    } catch (error) {
      if (error instanceof HostError) throw error;
      throw new HostError('outcome_unknown', `${step.about} did not finish: ${firstLineOf(error)}; it may or may not have happened`);
    }
  }
}

/** ANSI escape sequences (Playwright dims its call log lines with them). */
const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
/** A call-log line that says why the element could not take the input. */
const ACTIONABILITY_REASON = /intercepts pointer events$|^element is (?:not [a-z]+|outside of the viewport|inert)$|^locator resolved to hidden /;

/**
 * Why the element could not take the input: the last reason in Playwright's call log (a timed-out
 * action logs each failed attempt: "element is not visible", "element is not enabled", "element
 * is not stable", "element is outside of the viewport", "<div id=\"cover\"></div> intercepts
 * pointer events", ...), or the first line of the message when it names none.
 */
function actionabilityReason(error: Error): string {
  if (error instanceof NotActionable) return error.message;
  const lines = error.message
    .replace(ANSI_ESCAPE, '')
    .split('\n')
    .map((line) =>
      line
        .trim()
        .replace(/^- /, '')
        .replace(/^\d+ × /, ''),
    );
  const reason = lines.findLast((line) => ACTIONABILITY_REASON.test(line));
  if (reason === undefined) return firstLineOf(error);
  return reason.startsWith('locator resolved to hidden') ? 'element is not visible' : reason;
}
