import type { Page } from 'playwright-core';
import { Deadline } from '../deadline.ts';
import { HostError } from '../host-error.ts';
import { withCdpSession } from './cdp-session.ts';

/** Longest each way of closing a page may take (Playwright's close, then its target's), in ms. */
const PAGE_CLOSE_MS = 2_000;

/**
 * Closes `page` without running its `beforeunload` handlers, however stuck it is: Playwright's
 * `page.close({runBeforeUnload: false})`, and when that has not finished within 2,000 ms, the
 * page's target closed through a CDP session of its own (`Target.closeTarget`, which the browser
 * process carries out whatever the renderer is doing), again within 2,000 ms. Resolves true when
 * the page is closed, false when it is still open after both (at most 6,000 ms in all); never
 * throws.
 */
export async function closePage(page: Page): Promise<boolean> {
  if (page.isClosed()) return true;
  if (
    (await Deadline.waitAtMost(
      PAGE_CLOSE_MS,
      page.close({ runBeforeUnload: false }).then(() => true),
    )) === true
  )
    return true;
  if (!(await closeTarget(page))) return page.isClosed();
  // The target is gone; Playwright reports the page closed a moment later.
  return (
    page.isClosed() ||
    (await Deadline.waitAtMost(
      PAGE_CLOSE_MS,
      page.waitForEvent('close', { timeout: PAGE_CLOSE_MS }).then(() => true),
    )) === true
  );
}

/**
 * Closes the page's target over CDP: the browser process closes it, whatever the renderer does.
 * True once the browser has done so within 2,000 ms; false otherwise. Never throws.
 */
async function closeTarget(page: Page): Promise<boolean> {
  const deadline = Deadline.after(PAGE_CLOSE_MS);
  try {
    return await withCdpSession(deadline, page, async (session) => {
      const { targetInfo } = (await deadline.race(session.send('Target.getTargetInfo'))) as { targetInfo: { targetId: string } };
      await deadline.race(session.send('Target.closeTarget', { targetId: targetInfo.targetId }));
      return true;
    });
  } catch {
    return false;
  } finally {
    deadline.dispose();
  }
}

/**
 * Whether `page`'s main thread still runs script: false only when a trivial evaluation (`1`)
 * gets no answer within `ms` (a script that never ends, or one that has run for longer than
 * that); true when it answers, or fails for a reason other than time (its document changed under
 * the evaluation, the page closed or crashed). Never throws.
 */
export async function pageAnswers(page: Page, ms: number): Promise<boolean> {
  const probe = Deadline.after(ms);
  try {
    await probe.race(page.evaluate('1'));
    return true;
  } catch (error) {
    return !(error instanceof HostError);
  } finally {
    probe.dispose();
  }
}
