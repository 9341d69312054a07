import type { HostObservation } from '../shared/authentication.ts';
import type { Observation, SettleReport } from '../shared/observation.ts';
import type { WireScreenshot } from '../shared/run-files.ts';
import { captureRevision } from './capture.ts';
import type { WindowCaps } from './config.ts';
import type { ContinuationCursors } from './continuation-cursor.ts';
import type { Deadline } from './deadline.ts';
import { HostError } from './host-error.ts';
import { isolatedWorldOf } from './page/isolated-world.ts';
import { timePhase } from './phase-clock.ts';
import type { ProfileBrowser } from './profile-browser.ts';
import { observationScreenshot } from './screenshots.ts';
import type { SiteCatalog } from './site-verification/catalog.ts';
import { signInSignal } from './site-verification/sign-in-signal.ts';
import type { CapturedRevision } from './snapshot/captured-revision.ts';
import { sliceWindow } from './snapshot/window.ts';

/** What shaping an observation for one lease needs: the window caps and the cursor sealer. */
export interface ObservationContext {
  readonly caps: WindowCaps;
  readonly cursors: ContinuationCursors;
  readonly leaseId: string;
}

/**
 * The settle report of an explicit observe: it did not wait, so it claims no stability
 * (ADR-0159: "Ordinary explicit observation does not claim it waited for stability").
 */
export const NOT_WAITED: SettleReport = { outcome: 'not_waited', elapsed_ms: 0, pending_at_entry: 0, overflow: false };

/**
 * The shared/observation.ts `Observation` of `captured` whose window starts at snapshot line
 * `start`: `window.scope` is `[start_node, end_node)` of `total_nodes`; when lines remain,
 * `truncated` is true and `continuation` is a cursor, bound to this lease and revision, for the
 * next window.
 */
export function observationOf(captured: CapturedRevision, start: number, context: ObservationContext): Observation {
  const window = sliceWindow(captured.lines, start, context.caps);
  return {
    revision: captured.revision,
    url: captured.url,
    title: captured.title,
    settle: captured.settle,
    window: {
      scope: { start_node: window.start, end_node: window.end, total_nodes: window.total },
      truncated: window.truncated,
      ...(window.truncated ? { continuation: context.cursors.seal({ leaseId: context.leaseId, revision: captured.revision, start: window.end }) } : {}),
    },
    snapshot: window.text,
  };
}

/**
 * The wire observation of a full capture (navigate, act, plain observe): its first window, what
 * the page tried since the last such observation (`blocked`, `dialogs`; see PageEvents), the
 * downloads that finished since then (`downloaded_files`, at most 32; see PageDownloads), the
 * capture's `frames`, and, when the page asks for sign-in, the `sign_in` signal (see {@link signInSignal}; bounded by the
 * operation's deadline, and a check that fails simply adds no signal). Continuation reads never
 * carry the signal.
 */
export async function hostObservationOf(
  deadline: Deadline,
  browser: ProfileBrowser,
  captured: CapturedRevision,
  context: ObservationContext,
  catalog: SiteCatalog,
): Promise<HostObservation> {
  const window = observationOf(captured, 0, context);
  const page = browser.openPage;
  const trail = browser.traffic.trail();
  const signal =
    page === undefined ? undefined : await timePhase('sign_in', () => signInSignal(deadline, page, captured, catalog, trail)).catch(() => undefined);
  const { blocked, dialogs } = browser.events.drain();
  const downloads = browser.downloads.report();
  const observation: HostObservation = {
    ...window,
    ...(blocked.length > 0 ? { blocked } : {}),
    ...(dialogs.length > 0 ? { dialogs } : {}),
    ...(downloads.length > 0 ? { downloaded_files: downloads } : {}),
    ...(captured.frames.length > 0 ? { frames: [...captured.frames] } : {}),
    ...(captured.incomplete.length > 0 ? { incomplete: [...captured.incomplete] } : {}),
  };
  return signal === undefined ? observation : { ...observation, sign_in: signal };
}

/** Captures {@link capturePictured} takes before it gives up on a page that keeps navigating. */
const PICTURED_ATTEMPTS = 2;

/**
 * A full capture (see {@link captureRevision}) and the viewport screenshot of the same revision
 * (`page.observe {screenshot: true}`; see {@link observationScreenshot}), taken in the same turn
 * on the page right after the capture, before any other operation can touch the page. When the
 * main frame's document changed from the capture's start to the picture's end (a navigation by
 * its own script, a redirect: told by the document's `performance.timeOrigin`, read in the host's
 * isolated world, differing or unreadable), the picture may show another document: both are taken
 * again, once; a second such change fails the observe. Changes a page makes to its own document
 * within those milliseconds (an animation, a timer, a same-document URL change) are not detected,
 * as with any screenshot of a live page.
 * @throws what {@link captureRevision} and {@link observationScreenshot} throw;
 *   HostError('page_changed') when the document changed under both attempts.
 */
export async function capturePictured(
  deadline: Deadline,
  browser: ProfileBrowser,
  settle: SettleReport,
): Promise<{ captured: CapturedRevision; picture: WireScreenshot }> {
  for (let attempt = 1; ; attempt += 1) {
    const page = await browser.page(deadline);
    const world = isolatedWorldOf(page);
    const documentStart = (): Promise<number | undefined> => world.evaluate<number>(deadline, 'performance.timeOrigin').catch(() => undefined);
    const before = await documentStart();
    const captured = await captureRevision(deadline, browser, settle);
    const picture = await timePhase('screenshot', () => observationScreenshot(page, deadline));
    const after = await documentStart();
    if (before !== undefined && before === after) return { captured, picture };
    if (attempt >= PICTURED_ATTEMPTS) {
      throw new HostError('page_changed', "the page's document changed between its capture and its screenshot, twice; observe again");
    }
  }
}

/**
 * `page.observe {continuation}`: the next window of the cached latest revision; never recaptures,
 * never touches the page.
 * @throws HostError('invalid_params') for a forged or undecodable cursor, one issued to another
 *   lease, or one pointing outside the revision; HostError('stale_revision') when the cursor's
 *   revision is no longer the page's latest; HostError('page_changed') when the latest revision's
 *   references were invalidated by a failed capture (ADR-0159).
 */
export function continueObservation(browser: ProfileBrowser, cursor: string, context: ObservationContext): Observation {
  const position = context.cursors.open(cursor);
  if (position.leaseId !== context.leaseId) throw new HostError('invalid_params', 'continuation: issued to another lease');
  const latest = browser.revisions.latest;
  if (latest === undefined || position.revision !== latest.revision) {
    throw new HostError('stale_revision', `continuation is for revision ${position.revision}; the latest is ${browser.revisions.current}`);
  }
  if (browser.revisions.invalidation !== undefined) throw new HostError('page_changed', `observe again: ${browser.revisions.invalidation}`);
  if (position.start >= latest.lines.length) throw new HostError('invalid_params', 'continuation: points past the end of the snapshot');
  return observationOf(latest, position.start, context);
}
