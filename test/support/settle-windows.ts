import { DEFAULT_SETTLE_CONFIG } from '../../browser-host/config.ts';

/**
 * The one place the settle tests' timing tolerances live. Every window a test asserts is what
 * ADR-0159's rules imply for its fixture (the earliest moment settling may end) widened by these
 * numbers, which are sized for a loaded 2-core machine where other suites run at the same time.
 */

/** The host's settle budget and DOM-quiet period in these tests (the production numbers), in ms. */
export const BUDGET_MS = DEFAULT_SETTLE_CONFIG.budgetMs;
export const QUIET_MS = DEFAULT_SETTLE_CONFIG.quietMs;

/**
 * How much later than the rules' earliest moment a `dom_quiet` may land, in ms: the navigation or
 * the click itself (elapsed time counts from settling entry, before either), parsing, CDP round
 * trips and timer lag under load.
 */
export const LOAD_SLACK_MS = 700;

/**
 * How far past the budget a `bound_expired` by deadline may be reported, in ms: the budget's
 * timer firing late on a busy event loop. Small and bounded, never the operation's own deadline.
 */
export const BUDGET_OVERSHOOT_MS = 300;

/** `elapsed_ms` is rounded to whole ms, and the budget's end is checked in whole ms. */
export const ROUNDING_MS = 2;

/** An inclusive range of `elapsed_ms`, in ms. */
export interface ElapsedWindow {
  readonly min: number;
  readonly max: number;
}

/**
 * Where a `dom_quiet` lands that the rules place between `earliestMs` and `latestMs` on an idle
 * machine: `[earliestMs, latestMs + LOAD_SLACK_MS]`, never past the budget (beyond it settling
 * would have reported `bound_expired`). E.g. the delayed SPA: no earlier than its 800 ms fetch
 * plus 300 ms of quiet.
 */
export function quietAfter(earliestMs: number, latestMs: number = earliestMs): ElapsedWindow {
  return { min: earliestMs - ROUNDING_MS, max: Math.min(latestMs + LOAD_SLACK_MS, BUDGET_MS + BUDGET_OVERSHOOT_MS) };
}

/** Where a `bound_expired` by deadline lands: the budget, plus a small bounded overshoot. */
export const AT_BUDGET: ElapsedWindow = { min: BUDGET_MS - ROUNDING_MS, max: BUDGET_MS + BUDGET_OVERSHOOT_MS };

/**
 * Where a `bound_expired` by overflow lands: settling still waits for readiness and the quiet
 * period (so the capture sees a calmer page) but never for the untrusted request set, and never
 * past the budget.
 */
export const OVERFLOW_WINDOW: ElapsedWindow = { min: QUIET_MS - ROUNDING_MS, max: BUDGET_MS + BUDGET_OVERSHOOT_MS };
