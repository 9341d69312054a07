import type { Locator, Page } from 'playwright-core';
import type { ExpectedElement, ExpectedTarget, UploadFile } from '../shared/protocol.ts';
import type { BrowserAction } from '../shared/tool-arguments.ts';
import { captureReserveMs, captureRevision } from './capture.ts';
import type { SettleConfig } from './config.ts';
import type { Deadline } from './deadline.ts';
import { type DispatchPlan, type PlanContext, requireState, runPrechecks, sendInput, stepsAbout } from './dispatch-plan.ts';
import { dragPlan } from './drag.ts';
import { fillFormPlan } from './form-fill.ts';
import { firstLineOf, HostError } from './host-error.ts';
import { timePhase } from './phase-clock.ts';
import type { ProfileBrowser } from './profile-browser.ts';
import { enterSettling, type SettleEntry, settle } from './settle.ts';
import type { CapturedRevision } from './snapshot/captured-revision.ts';
import { countReachCandidates } from './snapshot/marks.ts';
import { checkTargets, type TargetExpectation } from './target-check.ts';
import { uploadPlan } from './upload.ts';

/** How much earlier than the deadline Playwright's action timeout fires, in ms. */
const PLAYWRIGHT_TIMEOUT_MARGIN_MS = 100;
/** Prechecks that took longer than this, in ms, waited for the page: the targets are checked again. */
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
 * What the act's elements must still be, and what it carries (`page.act` params, shared/protocol.ts):
 * `target` for the element `action.reference` names; `elements` for every further element it
 * touches (a drag's destination, a fill_form's other fields and its submit), required for each of
 * them when `target` is given; `file` the attached file an upload sets (required for an upload,
 * refused for any other action).
 */
export interface ActRequest {
  readonly target?: ExpectedTarget | undefined;
  readonly elements?: readonly ExpectedElement[] | undefined;
  readonly file?: UploadFile | undefined;
}

/**
 * Performs one agent action on the element its reference names, settles (ADR-0159) and captures
 * the next revision. In order:
 * 1. `action.revision` must be the page's latest revision, else `stale_revision`;
 * 2. the latest references must still be trusted, else `page_changed` (a capture failed or was
 *    cancelled, the page was replaced, or the lease is new: observe first);
 * 3. every element the action touches (`reference`; a drag's `to_reference`; a fill_form's fields
 *    and `submit_reference`) must be matched by `page.getByRef`, else `action_failed`;
 * 4. when `request.target` is given, each of those elements must still have the role, name and
 *    frame it was decided on (`target` for `reference`, the `request.elements` entry for the
 *    others) and be reachable (`target_changed`, `not_actionable` when inert; see
 *    {@link checkTargets}), all of them before any input;
 * 5. the elements must pass the action's prechecks (Playwright's trial run of it, or the element
 *    states it needs: for a fill_form every field's and the submit's), which send no input, within
 *    `config.actionabilityMs` (and the deadline), else `not_actionable` with Playwright's reason
 *    ("element is not visible", "<div id=cover> intercepts pointer events", ...), or
 *    `action_failed` when the action cannot apply to an element at all (a value a field cannot
 *    take, an upload on anything but a file input);
 * 6. `stillLeased` must not throw: the lease is checked once more right before the input, so a
 *    run cancelled while the prechecks waited sends nothing (`lease_lost`);
 * 7. when the prechecks waited (over 250 ms), the target checks of step 4 run again;
 * nothing is dispatched when any of these fails. Then settling is entered and the input is sent
 * once (never retried: a fill_form's fields in order, then its submit), bounded by the deadline;
 * the page settles and is captured.
 * @throws HostError('invalid_params') before anything else when the request does not fit the
 *   action (an upload without `file`, or `file` naming another file than `file_id`; `file` on
 *   another action; a fill_form whose `reference` is not its first field's; a touched element
 *   without an expectation while `target` is given);
 *   HostError('stale_revision' | 'page_changed' | 'action_failed' | 'not_actionable' |
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
  request: ActRequest = {},
): Promise<CapturedRevision> {
  const expectations = expectationsOf(action, request);
  if (action.revision !== browser.revisions.current) {
    throw new HostError('stale_revision', `revision ${action.revision} is not the page's latest (${browser.revisions.current}); nothing was dispatched`);
  }
  if (browser.revisions.invalidation !== undefined) {
    throw new HostError('page_changed', `observe again before acting: ${browser.revisions.invalidation}; nothing was dispatched`);
  }
  const page = await browser.page(deadline);
  // The target check's first reach read, a count that takes no snapshot, goes out beside the
  // reference matches; its subtree snapshots (which replace what getByRef resolves against) and
  // the page snapshot the check resolves references against come only after the matches.
  const candidates = expectations.length > 0 ? browser.trackCapture(countReachCandidates(deadline, page)) : undefined;
  await timePhase('target_check', () => requireMatches(deadline, page, touchedElements(action), action.revision)).catch(async (error: unknown) => {
    // No capture outlives its operation: the count (which never rejects) is joined first.
    await candidates;
    throw error;
  });

  // Settling, then the capture, keep their share; the action's own checks get the rest.
  const reserve = Math.min(config.budgetMs + captureReserveMs(deadline), deadline.remainingMs() / 2);
  const actionDeadline = deadline.leaving(reserve);
  // The prechecks get at most `actionabilityMs` of it, the input whatever is left.
  const checks = actionDeadline.child(config.actionabilityMs);
  let phase = checks;
  const plan = dispatchPlan({ page, timeout: () => Math.max(1, phase.remainingMs() - PLAYWRIGHT_TIMEOUT_MARGIN_MS) }, action, request.file);
  let entry: SettleEntry;
  try {
    // The elements must still be what the call was decided (and approved) on, and reachable: an
    // inert target or a relabelled one fails here, before any wait for actionability.
    await timePhase('target_check', () => checkTargets(actionDeadline, browser, page, expectations, candidates));
    const checksStarted = performance.now();
    await timePhase('actionability', () => runPrechecks(checks, plan))
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
    if (performance.now() - checksStarted > RECHECK_AFTER_WAIT_MS)
      await timePhase('target_check', () => checkTargets(actionDeadline, browser, page, expectations));
    // Settling entry: just before the input, so what the input starts joins the request set.
    entry = enterSettling(browser.traffic, config);
    try {
      await timePhase('input', () => sendInput(actionDeadline, plan));
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
    const report = await timePhase('settle', () => settle(settleDeadline, page, browser.traffic, entry, config));
    return await captureRevision(deadline, browser, report);
  } catch (error) {
    browser.revisions.invalidate(`no usable observation followed an action: ${firstLineOf(error)}`);
    throw new HostError('outcome_unknown', `the action was dispatched but no usable observation followed: ${firstLineOf(error)}`);
  } finally {
    settleDeadline.dispose();
  }
}

/** An element an action touches, and the words naming it in errors. */
interface TouchedElement {
  readonly reference: string;
  readonly about: string;
}

/**
 * Every element `action` touches, `reference` first: a drag's source and destination; a
 * fill_form's fields in order (the first is `reference`), then its submit element.
 */
function touchedElements(action: BrowserAction): TouchedElement[] {
  switch (action.action) {
    case 'drag':
      return [
        { reference: action.reference, about: 'the drag source' },
        { reference: action.to_reference, about: 'the drag destination' },
      ];
    case 'fill_form':
      return [
        ...action.fields.map((field, index) => ({ reference: field.reference, about: `field ${index + 1}` })),
        ...(action.submit_reference === undefined ? [] : [{ reference: action.submit_reference, about: 'the submit element' }]),
      ];
    default:
      return [{ reference: action.reference, about: `the ${action.action} target` }];
  }
}

/**
 * The target checks the act runs before its input (see {@link actOnPage} step 4): with
 * `request.target`, one per touched element, `target` for `action.reference` and the
 * `request.elements` entry for every other; without it, those `request.elements` names.
 * @throws HostError('invalid_params') when the request does not fit the action (see {@link actOnPage})
 */
function expectationsOf(action: BrowserAction, request: ActRequest): TargetExpectation[] {
  if (action.action === 'upload') {
    if (request.file === undefined) throw new HostError('invalid_params', 'an upload needs the attached file (file); nothing was dispatched');
    if (request.file.file_id !== action.file_id) {
      throw new HostError('invalid_params', `the file sent is ${request.file.file_id}, not the upload's ${action.file_id}; nothing was dispatched`);
    }
  } else if (request.file !== undefined) {
    throw new HostError('invalid_params', `a ${action.action} sets no file: file is for uploads only; nothing was dispatched`);
  }
  if (action.action === 'fill_form' && action.fields[0]?.reference !== action.reference) {
    throw new HostError('invalid_params', `a fill_form's reference must be its first field's; nothing was dispatched`);
  }
  const elements = request.elements ?? [];
  const expectations: TargetExpectation[] = [];
  const manyElements = action.action === 'drag' || action.action === 'fill_form';
  for (const { reference, about } of touchedElements(action)) {
    const listed = elements.find((element) => element.reference === reference);
    const expected = reference === action.reference ? (request.target ?? listed) : listed;
    if (expected === undefined && request.target !== undefined) {
      throw new HostError('invalid_params', `${about} (${reference}) has no expectation in elements; nothing was dispatched`);
    }
    // The single-element acts' errors keep naming the element by its reference alone, as before 1.5.0.
    if (expected !== undefined) expectations.push({ reference, expected, ...(manyElements ? { about } : {}) });
  }
  return expectations;
}

/**
 * Every touched element's reference must match an element of the page; the matches are read at
 * once, and the first element in order that fails decides the error.
 * @throws HostError('action_failed') as {@link requireMatch}
 */
async function requireMatches(deadline: Deadline, page: Page, touched: readonly TouchedElement[], revision: number): Promise<void> {
  const matched = await Promise.allSettled(touched.map(({ reference }) => requireMatch(deadline, page, reference, revision)));
  const failed = matched.find((result) => result.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}

/** @throws HostError('action_failed') when `reference` matches no element of the page. */
async function requireMatch(deadline: Deadline, page: Page, reference: string, revision: number): Promise<void> {
  const matches = await deadline.race(page.getByRef(reference).count()).catch((error: unknown) => {
    if (error instanceof HostError) throw error;
    throw new HostError('action_failed', `reference ${reference}: ${firstLineOf(error)}; nothing was dispatched`);
  });
  if (matches === 0) {
    throw new HostError('action_failed', `reference ${reference} matches no element of revision ${revision}; nothing was dispatched`);
  }
}

/** The two phases of `action` (see {@link DispatchPlan}); `file` is an upload's. */
function dispatchPlan(context: PlanContext, action: BrowserAction, file: UploadFile | undefined): DispatchPlan {
  const { page, timeout } = context;
  if (action.action === 'drag') return dragPlan(context, action);
  if (action.action === 'fill_form') return fillFormPlan(context, action);
  // Checked by expectationsOf before anything else.
  if (action.action === 'upload') return uploadPlan(context, action, file as UploadFile);
  const target = page.getByRef(action.reference);
  const about = `${action.action} on ${action.reference}`;
  const plan = (precheck: (() => Promise<unknown>)[], input: (() => Promise<unknown>)[]): DispatchPlan => ({
    precheck: stepsAbout(about, ...precheck),
    input: stepsAbout(about, ...input),
  });
  const visible = () => target.waitFor({ state: 'visible', timeout: timeout() });
  switch (action.action) {
    case 'click':
      return plan([() => target.click({ trial: true, timeout: timeout() })], [() => target.click({ force: true, timeout: timeout() })]);
    case 'hover':
      return plan([() => target.hover({ trial: true, timeout: timeout() })], [() => target.hover({ force: true, timeout: timeout() })]);
    case 'type':
      return plan(
        [visible, requireState('editable', () => target.isEditable({ timeout: timeout() }))],
        [
          () => target.fill(action.text, { force: true, timeout: timeout() }),
          ...(action.submit === true ? [() => target.press('Enter', { timeout: timeout() })] : []),
        ],
      );
    case 'press':
      // Playwright presses on the focused element without actionability checks; the reference
      // was already resolved, so there is nothing more to check without sending input.
      return plan([], [() => target.press(action.key, { timeout: timeout() })]);
    case 'select':
      return plan(
        [visible, requireState('enabled', () => target.isEnabled({ timeout: timeout() }))],
        [() => target.selectOption(action.value, { force: true, timeout: timeout() })],
      );
    case 'check':
      return plan([() => target.check({ trial: true, timeout: timeout() })], [() => target.check({ force: true, timeout: timeout() })]);
    case 'uncheck':
      return plan([() => target.uncheck({ trial: true, timeout: timeout() })], [() => target.uncheck({ force: true, timeout: timeout() })]);
    case 'scroll':
      // The wheel is the action. The pointer is only placed, and never by scrolling the element
      // into view: that would undo the scrolls before this one.
      return plan(
        [visible],
        [
          async () => {
            const point = await wheelPoint(page, target, timeout());
            await page.mouse.move(point.x, point.y);
            await page.mouse.wheel(0, action.delta);
          },
        ],
      );
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
