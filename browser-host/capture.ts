import { errors } from 'playwright-core';
import type { SettleReport } from '../shared/observation.ts';
import { Deadline } from './deadline.ts';
import { confineFrames } from './frame-confinement.ts';
import { firstLineOf, HostError } from './host-error.ts';
import { timePhase } from './phase-clock.ts';
import type { ProfileBrowser } from './profile-browser.ts';
import type { CapturedRevision } from './snapshot/captured-revision.ts';
import { readElementCensus } from './snapshot/element-census.ts';
import { markSnapshot, readReach } from './snapshot/marks.ts';

/** How long a cancelled capture gets to wind down before the host answers anyway, in ms. */
const JOIN_GRACE_MS = 5_000;
/** Time kept back for the capture when earlier steps share an operation's deadline, in ms. */
const CAPTURE_RESERVE_MS = 1_000;

/**
 * How much of `deadline` to keep for the final capture: 1,000 ms, or a third of what is left
 * when that is less, so short operations still get to dispatch.
 */
export function captureReserveMs(deadline: Deadline): number {
  return Math.min(CAPTURE_RESERVE_MS, Math.floor(deadline.remainingMs() / 3));
}

/**
 * Takes a full capture of the browser's page: Playwright's AI-mode aria snapshot
 * (`page.ariaSnapshot({mode: 'ai'})`, `[ref=eN]` markers that `page.getByRef` resolves), the title
 * and the URL, recorded as the page's next revision together with `settle`, the report of the
 * settling that preceded it, and the page's frames, content of frames outside the run's origins
 * withheld (see {@link confineFrames}), with names from content and `[inert]` marks written in
 * and what could not be observed listed (see {@link markSnapshot}), and the census of the elements
 * later reads look for, taken in the same turn right before the snapshot (see {@link readElementCensus}).
 *
 * Capture cancellation (ADR-0159): if the capture fails or outlives the deadline, it is aborted
 * through its signal and joined (its Playwright calls awaited until they have finished, at most
 * 5,000 ms more; see `ProfileBrowser.capturesRunning`) before this returns; no references are
 * returned, no revision is consumed, and the page is invalidated, so later acts and continuation
 * reads fail `page_changed` until a fresh full capture succeeds. Work Chromium already started in
 * the renderer cannot be interrupted; later operations on the page simply wait behind it.
 * @throws HostError('deadline_exceeded') when the capture ran out of time,
 *   HostError('page_changed') when it failed otherwise (page closed, crashed, replaced).
 */
export async function captureRevision(deadline: Deadline, browser: ProfileBrowser, settle: SettleReport): Promise<CapturedRevision> {
  const page = await browser.page(deadline);
  // Its own signal, so the capture can be cancelled without ending the whole operation.
  const capture = deadline.child(deadline.remainingMs());
  const reading = browser.trackCapture(
    // What a person cannot reach is read first: the page's own snapshot must be the last one taken (snapshot/marks.ts).
    timePhase('reach', async () => {
      const census = await readElementCensus(capture, page);
      return { census, reach: await readReach(capture, page, census) };
    }).then(({ census, reach }) =>
      timePhase('snapshot', async () => {
        const text = await page.ariaSnapshot({ mode: 'ai', signal: capture.signal, timeout: Math.max(1, capture.remainingMs()) });
        // The census read the title in the same round trip; only without one is it read again.
        return { text, reach, census, title: census?.title ?? (await page.title()) };
      }),
    ),
  );
  try {
    const { text, reach, census, title } = await capture.race(reading);
    const url = page.url();
    const confined = await timePhase('frames', () => capture.race(confineFrames(capture, page, text === '' ? [] : text.split('\n'), browser.confinement)));
    const { lines, incomplete } = await timePhase('marks', () => capture.race(markSnapshot(capture, page, confined.lines, reach, browser.closedRoots)));
    return browser.revisions.record({ url, title, lines, frames: confined.frames, incomplete, settle, ...(census === undefined ? {} : { census }) });
  } catch (error) {
    capture.dispose();
    // Bounded: one still running after the grace period leaves the page invalidated, which is what matters.
    await Deadline.waitAtMost(JOIN_GRACE_MS, reading);
    browser.revisions.invalidate(`a capture failed: ${firstLineOf(error)}`);
    const timedOut = deadline.expired || error instanceof errors.TimeoutError || (error instanceof HostError && error.code === 'deadline_exceeded');
    throw timedOut
      ? new HostError('deadline_exceeded', 'the capture ran out of time and was cancelled; earlier references are void')
      : new HostError('page_changed', `the capture failed: ${firstLineOf(error)}`);
  } finally {
    capture.dispose();
  }
}
