import { errors, type Locator, type Page } from 'playwright-core';
import type { ExpectedTarget } from '../shared/protocol.ts';
import type { BrowserAction } from '../shared/tool-arguments.ts';
import { captureReserveMs, captureRevision } from './capture.ts';
import type { SettleConfig } from './config.ts';
import type { Deadline } from './deadline.ts';
import { firstLineOf, HostError } from './host-error.ts';
import type { ProfileBrowser } from './profile-browser.ts';
import { enterSettling, type SettleEntry, settle } from './settle.ts';
import type { CapturedRevision } from './snapshot/captured-revision.ts';
import { checkTarget } from './target-check.ts';

/** How much earlier than the deadline Playwright's action timeout fires, in ms. */
const PLAYWRIGHT_TIMEOUT_MARGIN_MS = 100;
/** Prechecks that took longer than this, in ms, waited for the page: the target is checked again. */
const RECHECK_AFTER_WAIT_MS = 250;

/**
 * What an act is configured with: the settling numbers (ADR-0159) and `actionabilityMs`, the
 * longest the prechecks may wait for the target to become able to take the input, in ms
 * (HostConfig `actionabilityMs`, default 5,000).
 */
export interface ActConfig extends SettleConfig {
  readonly actionabilityMs: number;
}

/**
 * Performs one agent action on the element its reference names, settles (ADR-0159) and captures
 * the next revision. In order:
 * 1. `action.revision` must be the page's latest revision, else `stale_revision`;
 * 2. the latest references must still be trusted, else `page_changed` (a capture failed or was
 *    cancelled, the page was replaced, or the lease is new: observe first);
 * 3. `page.getByRef(action.reference)` must match an element, else `action_failed`;
 * 4. when `expected` is given, the element must still have that role, name and frame and be
 *    reachable (`target_changed`, `not_actionable` when inert; see {@link checkTarget});
 * 5. the element must pass the action's prechecks (Playwright's trial run of it, or the element
 *    states it needs), which send no input, within `config.actionabilityMs` (and the deadline),
 *    else `not_actionable` with Playwright's reason ("element is not visible", "<div id=cover>
 *    intercepts pointer events", ...), or `action_failed` when the action cannot apply to the
 *    element at all;
 * 6. `stillLeased` must not throw: the lease is checked once more right before the input, so a
 *    run cancelled while the prechecks waited sends nothing (`lease_lost`);
 * 7. when the prechecks waited (over 250 ms), the target check of step 4 runs again;
 * nothing is dispatched when any of these fails. Then settling is entered and the input is sent
 * once (never retried), bounded by the deadline; the page settles and is captured.
 * @throws HostError('stale_revision' | 'page_changed' | 'action_failed' | 'not_actionable' |
 *   'lease_lost' | 'target_changed' | 'outside_run_origins') with nothing dispatched;
 *   HostError('outcome_unknown') when the input may have reached the page but the outcome cannot
 *   be known (the input phase did not finish, or settling or the capture after it failed:
 *   ADR-0159 "loss of usable evidence after an action"); the page's references are then
 *   invalidated, so the next act fails `page_changed` until a fresh capture.
 */
export async function actOnPage(
  deadline: Deadline,
  browser: ProfileBrowser,
  action: BrowserAction,
  config: ActConfig,
  stillLeased: () => void = () => {},
  expected?: ExpectedTarget,
): Promise<CapturedRevision> {
  if (action.revision !== browser.revisions.current) {
    throw new HostError('stale_revision', `revision ${action.revision} is not the page's latest (${browser.revisions.current}); nothing was dispatched`);
  }
  if (browser.revisions.invalidation !== undefined) {
    throw new HostError('page_changed', `observe again before acting: ${browser.revisions.invalidation}; nothing was dispatched`);
  }
  const page = await browser.page(deadline);
  const target = page.getByRef(action.reference);
  const matches = await deadline.race(target.count()).catch((error: unknown) => {
    if (error instanceof HostError) throw error;
    throw new HostError('action_failed', `reference ${action.reference}: ${firstLineOf(error)}; nothing was dispatched`);
  });
  if (matches === 0) {
    throw new HostError('action_failed', `reference ${action.reference} matches no element of revision ${action.revision}; nothing was dispatched`);
  }

  // Settling, then the capture, keep their share; the action's own checks get the rest.
  const reserve = Math.min(config.budgetMs + captureReserveMs(deadline), deadline.remainingMs() / 2);
  const actionDeadline = deadline.leaving(reserve);
  // The prechecks get at most `actionabilityMs` of it, the input whatever is left.
  const checks = actionDeadline.child(config.actionabilityMs);
  let phase = checks;
  const plan = dispatchPlan(page, target, action, () => Math.max(1, phase.remainingMs() - PLAYWRIGHT_TIMEOUT_MARGIN_MS));
  let entry: SettleEntry;
  try {
    // The element must still be what the call was decided (and approved) on, and reachable: an
    // inert target or a relabelled one fails here, before any wait for actionability.
    if (expected !== undefined) await checkTarget(actionDeadline, browser, page, action.reference, expected);
    const checksStarted = performance.now();
    await precheck(checks, plan, action)
      .catch((error: unknown) => {
        // A lease that ended while the prechecks waited is why they failed (its page was left).
        stillLeased();
        throw error;
      })
      .finally(() => {
        checks.dispose();
        phase = actionDeadline;
      });
    // The prechecks may have waited (a disabled button, say) while the run was cancelled and its
    // lease released: the last moment to refuse, with nothing sent.
    stillLeased();
    // Prechecks that waited (a disabled button enabling, an animation ending) gave the page time
    // to change the element: checked again right before the input.
    if (expected !== undefined && performance.now() - checksStarted > RECHECK_AFTER_WAIT_MS) {
      await checkTarget(actionDeadline, browser, page, action.reference, expected);
    }
    // Settling entry: just before the input, so what the input starts joins the request set.
    entry = enterSettling(browser.traffic, config);
    try {
      await sendInput(actionDeadline, plan, action);
    } catch (error) {
      entry.requests.dispose();
      // The input may have changed the page: its earlier references are void until a fresh capture.
      browser.revisions.invalidate(`an action's outcome is unknown: ${firstLineOf(error)}`);
      throw error;
    }
  } finally {
    actionDeadline.dispose();
  }

  const settleDeadline = deadline.leaving(captureReserveMs(deadline));
  try {
    const report = await settle(settleDeadline, page, browser.traffic, entry, config);
    return await captureRevision(deadline, browser, report);
  } catch (error) {
    browser.revisions.invalidate(`no usable observation followed an action: ${firstLineOf(error)}`);
    throw new HostError('outcome_unknown', `the action was dispatched but no usable observation followed: ${firstLineOf(error)}`);
  } finally {
    settleDeadline.dispose();
  }
}

/** One step of a dispatch, run with what is left of the action's deadline. */
type Step = () => Promise<unknown>;

/**
 * An action as two phases. The input runs with `force`: the prechecks were the action's one
 * actionability pass, so Playwright does not wait for the same checks a second time.
 * `precheck` sends no input: Playwright's trial run of the same action
 * (its actionability checks: attached, visible, stable, enabled, receiving events) or, for the
 * actions Playwright has no trial for, the same element states checked directly. `input` sends
 * the action itself.
 */
interface DispatchPlan {
  readonly precheck: readonly Step[];
  readonly input: readonly Step[];
}

/** The two phases of `action` on `target`; `timeout` is the Playwright timeout for each step, in ms. */
function dispatchPlan(page: Page, target: Locator, action: BrowserAction, timeout: () => number): DispatchPlan {
  const visible: Step = () => target.waitFor({ state: 'visible', timeout: timeout() });
  const require =
    (state: string, check: () => Promise<boolean>): Step =>
    async () => {
      if (!(await check())) throw new NotActionable(`element is not ${state}`);
    };
  switch (action.action) {
    case 'click':
      return { precheck: [() => target.click({ trial: true, timeout: timeout() })], input: [() => target.click({ force: true, timeout: timeout() })] };
    case 'type':
      return {
        precheck: [visible, require('editable', () => target.isEditable({ timeout: timeout() }))],
        input: [
          () => target.fill(action.text, { force: true, timeout: timeout() }),
          ...(action.submit === true ? [() => target.press('Enter', { timeout: timeout() })] : []),
        ],
      };
    case 'press':
      // Playwright presses on the focused element without actionability checks; the reference
      // was already resolved, so there is nothing more to check without sending input.
      return { precheck: [], input: [() => target.press(action.key, { timeout: timeout() })] };
    case 'select':
      return {
        precheck: [visible, require('enabled', () => target.isEnabled({ timeout: timeout() }))],
        input: [() => target.selectOption(action.value, { force: true, timeout: timeout() })],
      };
    case 'check':
      return { precheck: [() => target.check({ trial: true, timeout: timeout() })], input: [() => target.check({ force: true, timeout: timeout() })] };
    case 'uncheck':
      return { precheck: [() => target.uncheck({ trial: true, timeout: timeout() })], input: [() => target.uncheck({ force: true, timeout: timeout() })] };
    case 'scroll':
      // The wheel is the action. The pointer is only placed, and never by scrolling the element
      // into view: that would undo the scrolls before this one.
      return {
        precheck: [visible],
        input: [
          async () => {
            const point = await wheelPoint(page, target, timeout());
            await page.mouse.move(point.x, point.y);
            await page.mouse.wheel(0, action.delta);
          },
        ],
      };
    default:
      throw new HostError('action_failed', `${action.action} is not supported by this host yet; nothing was dispatched`);
  }
}

/**
 * Where to turn the wheel for a scroll on `target`, in viewport CSS px: the centre of the part of
 * the element inside the viewport, or, when the element has been scrolled out of view, the centre
 * of the viewport (the page scrolls under it). Reads layout only; sends no input.
 */
async function wheelPoint(page: Page, target: Locator, timeoutMs: number): Promise<{ x: number; y: number }> {
  const box = await target.boundingBox({ timeout: timeoutMs });
  const viewport = page.viewportSize() ?? (await page.evaluate(() => ({ width: innerWidth, height: innerHeight })));
  const centre = { x: viewport.width / 2, y: viewport.height / 2 };
  if (!box) return centre;
  const left = Math.max(0, box.x);
  const top = Math.max(0, box.y);
  const right = Math.min(viewport.width, box.x + box.width);
  const bottom = Math.min(viewport.height, box.y + box.height);
  if (right <= left || bottom <= top) return centre;
  return { x: (left + right) / 2, y: (top + bottom) / 2 };
}

/** A state the element must be in for the action (editable, enabled) that it is not in. */
class NotActionable extends Error {}

/**
 * Runs the plan's prechecks (see {@link DispatchPlan}) within `deadline`, the action's share
 * bounded by `actionabilityMs`. They send no input, so their failure, or the deadline passing
 * during them, means nothing was dispatched.
 * @throws HostError('not_actionable') when the element did not become able to take the input in
 *   time, with Playwright's reason (see {@link actionabilityReason});
 *   HostError('action_failed') when the action cannot apply to the element (checking a button,
 *   say).
 */
async function precheck(deadline: Deadline, plan: DispatchPlan, action: BrowserAction): Promise<void> {
  for (const step of plan.precheck) {
    try {
      await deadline.race(
        step(),
        'not_actionable',
        `${action.action} on ${action.reference}: the element did not become actionable in time; nothing was dispatched`,
      );
    } catch (error) {
      if (error instanceof HostError) throw error;
      if (error instanceof errors.TimeoutError || error instanceof NotActionable) {
        throw new HostError('not_actionable', `${action.action} on ${action.reference}: ${actionabilityReason(error)}; nothing was dispatched`);
      }
      throw new HostError('action_failed', `${action.action} on ${action.reference}: ${firstLineOf(error)}; nothing was dispatched`);
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

/**
 * Sends the action's input, once, never retried. Any failure leaves the outcome unknown:
 * Playwright can time out or fail after its input reached the page (waiting for the page to
 * acknowledge it, or for a navigation it started), and a blocked page never acknowledges at all.
 * @throws HostError('outcome_unknown')
 */
async function sendInput(deadline: Deadline, plan: DispatchPlan, action: BrowserAction): Promise<void> {
  for (const step of plan.input) {
    try {
      await deadline.race(step(), 'outcome_unknown', `${action.action} ran out of time mid-dispatch; it may or may not have happened`);
    } catch (error) {
      if (error instanceof HostError) throw error;
      throw new HostError('outcome_unknown', `${action.action} on ${action.reference} did not finish: ${firstLineOf(error)}; it may or may not have happened`);
    }
  }
}
