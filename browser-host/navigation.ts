import type { Page } from 'playwright-core';
import { captureReserveMs, captureRevision } from './capture.ts';
import type { SettleConfig } from './config.ts';
import type { Deadline } from './deadline.ts';
import { firstLineOf, HostError } from './host-error.ts';
import { timePhase } from './phase-clock.ts';
import type { ProfileBrowser } from './profile-browser.ts';
import { enterSettling, settle } from './settle.ts';
import type { CapturedRevision } from './snapshot/captured-revision.ts';

/** Longest the host waits for Chromium's error page after a failed load, in ms. */
const ERROR_PAGE_WAIT_MS = 1_000;

/**
 * The URL to load, if it is one the host will load at all: absolute http or https only, without
 * credentials (`user:pass@`). The edge already denies everything else by policy (DESIGN.md
 * section 5, hardline rules); this is defence in depth against whatever else reaches the wire.
 * @throws HostError('invalid_params') for anything else (file:, chrome:, javascript:, data:,
 *   credentials, ...).
 */
export function navigableUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new HostError('invalid_params', 'url: not an absolute URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new HostError('invalid_params', `url: only http and https are allowed, not ${parsed.protocol}`);
  }
  if (parsed.username !== '' || parsed.password !== '') throw new HostError('invalid_params', 'url: URLs carrying credentials are refused');
  return parsed;
}

/** Playwright's `page.goto` failure when the response turned into a download. */
const DOWNLOAD_STARTED = /Download is starting/;

/**
 * Loads `url` in the browser's page, settles (ADR-0159) and captures the next revision.
 * The load waits only for commit (the response arrived and the new document exists); readiness
 * is settling's job, so slow subresources never hold it back. Time is split so that settling
 * and the capture keep a share of `deadline`. The host performs this navigation itself, so a
 * `beforeunload` dialog of the page being left is accepted (see `ProfileBrowser.hostNavigation`).
 * A URL whose response is an attachment starts a download and the page stays where it was (its
 * next revision is captured as after any navigation).
 * @throws HostError('invalid_params') for a non-http(s) URL (before anything is loaded);
 *   HostError('navigation_failed') when the load fails or times out (earlier references are then
 *   invalidated); HostError('deadline_exceeded' | 'page_changed') when the capture fails.
 */
export async function navigatePage(deadline: Deadline, browser: ProfileBrowser, url: string, config: SettleConfig): Promise<CapturedRevision> {
  const target = navigableUrl(url);
  return loadAndCapture(deadline, browser, config, target.origin, target.href, (page, timeout, signal) =>
    page.goto(target.href, { waitUntil: 'commit', timeout, signal }),
  );
}

/**
 * Loads, settles and captures as {@link navigatePage}, with `load` (given the page, its timeout
 * in ms and an abort signal) making the move; `origin` and `described` name the target in the
 * operator's log and the agent's error.
 */
export async function loadAndCapture(
  deadline: Deadline,
  browser: ProfileBrowser,
  config: SettleConfig,
  origin: string,
  described: string,
  load: (page: Page, timeoutMs: number, signal: AbortSignal) => Promise<unknown>,
): Promise<CapturedRevision> {
  const page = await browser.page(deadline);
  const entry = enterSettling(browser.traffic, config);
  const loading = deadline.leaving(captureReserveMs(deadline) + Math.min(config.budgetMs, deadline.remainingMs() / 3));
  try {
    await browser.hostNavigation(() => load(page, Math.max(1, loading.remainingMs()), loading.signal));
  } catch (error) {
    // A URL that answers with an attachment is downloaded (reported by a later observation, see
    // page/downloads.ts) and leaves the page where it was: that page is settled and captured.
    if (!DOWNLOAD_STARTED.test(firstLineOf(error))) {
      entry.requests.dispose();
      browser.revisions.invalidate('a navigation failed');
      await errorPageCommitted(deadline, page);
      // Chromium's own error text (connection refused or reset, name not resolved) would tell a
      // page's redirects apart: a port-scan oracle. The agent gets the code; the operator's log the detail.
      process.stderr.write(`browser-host: profile ${browser.profileId}: a navigation to ${origin} failed: ${firstLineOf(error)}\n`);
      throw new HostError('navigation_failed', `could not load ${described}`);
    }
  } finally {
    loading.dispose();
  }
  const settleDeadline = deadline.leaving(captureReserveMs(deadline));
  try {
    const report = await timePhase('settle', () => settle(settleDeadline, page, browser.traffic, entry, config));
    return await captureRevision(deadline, browser, report);
  } finally {
    settleDeadline.dispose();
  }
}

/**
 * Chromium commits its own error page (`chrome-error://chromewebdata/`) just after a load fails;
 * a navigation started before that commit would be interrupted by it. Waits (at most 1,000 ms)
 * for that commit so the next operation starts from a settled frame. Never throws.
 */
async function errorPageCommitted(deadline: Deadline, page: Page): Promise<void> {
  if (page.url().startsWith('chrome-error://')) return;
  const wait = deadline.child(ERROR_PAGE_WAIT_MS);
  try {
    await page.waitForEvent('framenavigated', {
      predicate: (frame) => frame === page.mainFrame() && frame.url().startsWith('chrome-error://'),
      timeout: Math.max(1, wait.remainingMs()),
      signal: wait.signal,
    });
  } catch {
    // No error page (an aborted load, a download): nothing to wait for.
  } finally {
    wait.dispose();
  }
}
