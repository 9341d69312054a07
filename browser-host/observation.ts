import type { HostObservation } from '../shared/authentication.ts';
import type { Observation, SettleReport } from '../shared/observation.ts';
import type { WindowCaps } from './config.ts';
import type { ContinuationCursors } from './continuation-cursor.ts';
import type { Deadline } from './deadline.ts';
import { HostError } from './host-error.ts';
import type { ProfileBrowser } from './profile-browser.ts';
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
  const signal = page === undefined ? undefined : await signInSignal(deadline, page, captured, catalog, trail).catch(() => undefined);
  const { blocked, dialogs } = browser.events.drain();
  const observation: HostObservation = {
    ...window,
    ...(blocked.length > 0 ? { blocked } : {}),
    ...(dialogs.length > 0 ? { dialogs } : {}),
    ...(captured.frames.length > 0 ? { frames: [...captured.frames] } : {}),
    ...(captured.incomplete.length > 0 ? { incomplete: [...captured.incomplete] } : {}),
  };
  return signal === undefined ? observation : { ...observation, sign_in: signal };
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
