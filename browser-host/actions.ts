import type { Locator, Page } from 'playwright-core';
import type { BrowserAction } from '../shared/tools.ts';
import { captureReserveMs, captureRevision } from './capture.ts';
import type { SettleConfig } from './config.ts';
import type { Deadline } from './deadline.ts';
import { HostError, firstLineOf } from './host-error.ts';
import type { CapturedRevision, ProfileBrowser } from './profile-browser.ts';
import { enterSettling, settle } from './settle.ts';

/** How much earlier than the deadline Playwright's action timeout fires, in ms. */
const PLAYWRIGHT_TIMEOUT_MARGIN_MS = 100;

/**
 * Performs one agent action on the element its reference names, settles (ADR-0159) and captures
 * the next revision. In order:
 * 1. `action.revision` must be the page's latest revision, else `stale_revision`;
 * 2. the latest references must still be trusted, else `page_changed` (a capture failed or was
 *    cancelled, the page was replaced, or the lease is new: observe first);
 * 3. `page.getByRef(action.reference)` must match an element, else `action_failed`;
 * nothing is dispatched when any of these fails. Then settling is entered, the action is
 * dispatched once (never retried) with Playwright's actionability checks bounded by the deadline,
 * the page settles and is captured.
 * @throws HostError('stale_revision' | 'page_changed' | 'action_failed') with nothing dispatched;
 *   HostError('outcome_unknown') when the dispatch may have happened but its outcome cannot be
 *   known (the deadline passed mid-dispatch, a later step of the action failed, or the capture
 *   after it failed: ADR-0159 "loss of usable evidence after an action").
 */
export async function actOnPage(deadline: Deadline, browser: ProfileBrowser, action: BrowserAction, config: SettleConfig): Promise<CapturedRevision> {
  if (action.revision !== browser.revision) {
    throw new HostError('stale_revision', `revision ${action.revision} is not the page's latest (${browser.revision}); nothing was dispatched`);
  }
  if (browser.invalidation !== undefined) {
    throw new HostError('page_changed', `observe again before acting: ${browser.invalidation}; nothing was dispatched`);
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
  const entry = enterSettling(browser.traffic, config);
  try {
    await dispatch(actionDeadline, page, target, action);
  } catch (error) {
    entry.requests.dispose();
    throw error;
  } finally {
    actionDeadline.dispose();
  }

  const settleDeadline = deadline.leaving(captureReserveMs(deadline));
  try {
    const report = await settle(settleDeadline, page, browser.traffic, entry, config);
    return await captureRevision(deadline, browser, report);
  } catch (error) {
    throw new HostError('outcome_unknown', `the action was dispatched but no usable observation followed: ${firstLineOf(error)}`);
  } finally {
    settleDeadline.dispose();
  }
}

/**
 * Dispatches the action. Playwright waits for actionability (attached, visible, stable, enabled,
 * receiving events) before any input, so a failure of the first step means nothing was sent
 * (`action_failed`). A failure after an earlier step succeeded, or the deadline passing while a
 * step is in flight, leaves the outcome unknown.
 */
async function dispatch(deadline: Deadline, page: Page, target: Locator, action: BrowserAction): Promise<void> {
  // Playwright's own timeout ends a little before the deadline: it knows whether it sent input,
  // the deadline does not.
  const timeout = (): number => Math.max(1, deadline.remainingMs() - PLAYWRIGHT_TIMEOUT_MARGIN_MS);
  const steps: Array<() => Promise<unknown>> = (() => {
    switch (action.action) {
      case 'click':
        return [() => target.click({ timeout: timeout() })];
      case 'type':
        return [
          () => target.fill(action.text, { timeout: timeout() }),
          ...(action.submit === true ? [() => target.press('Enter', { timeout: timeout() })] : []),
        ];
      case 'press':
        return [() => target.press(action.key, { timeout: timeout() })];
      case 'select':
        return [() => target.selectOption(action.value, { timeout: timeout() })];
      case 'check':
        return [() => target.check({ timeout: timeout() })];
      case 'uncheck':
        return [() => target.uncheck({ timeout: timeout() })];
      case 'scroll':
        // Hovering only positions the pointer over the element; the wheel is the action.
        return [() => target.hover({ timeout: timeout() }), () => page.mouse.wheel(0, action.delta)];
    }
  })();
  for (const [index, step] of steps.entries()) {
    try {
      await deadline.race(step(), 'outcome_unknown', `${action.action} ran out of time mid-dispatch; it may or may not have happened`);
    } catch (error) {
      if (error instanceof HostError) throw error;
      if (index === 0) throw new HostError('action_failed', `${action.action} on ${action.reference}: ${firstLineOf(error)}; nothing was dispatched`);
      throw new HostError('outcome_unknown', `${action.action} on ${action.reference} failed part-way: ${firstLineOf(error)}`);
    }
  }
}
