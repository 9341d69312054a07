import type { HistoryMove } from '../shared/tool-arguments.ts';
import type { SettleConfig } from './config.ts';
import type { Deadline } from './deadline.ts';
import { HostError } from './host-error.ts';
import { loadAndCapture } from './navigation.ts';
import { withCdpSession } from './page/cdp-session.ts';
import type { ProfileBrowser } from './profile-browser.ts';
import type { CapturedRevision } from './snapshot/captured-revision.ts';

/** What CDP `Page.getNavigationHistory` answers (the fields the host reads). */
interface NavigationHistory {
  readonly currentIndex: number;
  readonly entries: readonly { readonly url: string }[];
}

/**
 * The URL of the entry `move` would land on in the driven page's session history, without moving:
 * the previous entry for `back`, the next for `forward`, the current one for `reload`; null when
 * there is no such entry (read with CDP `Page.getNavigationHistory`, within `deadline`).
 * @throws HostError('deadline_exceeded') when the deadline passes first; HostError('page_changed')
 *   when the page went away.
 */
export async function landingUrl(deadline: Deadline, browser: ProfileBrowser, move: HistoryMove): Promise<string | null> {
  const page = await browser.page(deadline);
  const history = await withCdpSession(deadline, page, (session) => deadline.race(session.send('Page.getNavigationHistory') as Promise<NavigationHistory>));
  const index = history.currentIndex + (move === 'back' ? -1 : move === 'forward' ? 1 : 0);
  return history.entries[index]?.url ?? null;
}

/**
 * Makes a history move (1.5.0) on the driven page, then settles and captures as a navigation does
 * (see `loadAndCapture`), but only onto the entry policy decided on: first, the landing entry's URL
 * must be exactly `expectedUrl` (`target_changed` otherwise: the history changed since the edge
 * asked), and its origin one of the lease's origins (`outside_run_origins` otherwise, whatever the
 * edge decided); nothing moves when either fails.
 * @throws HostError('target_changed' | 'outside_run_origins') with nothing moved;
 *   HostError('navigation_failed') when the move fails or times out (earlier references are then
 *   invalidated); HostError('deadline_exceeded' | 'page_changed') when the capture fails.
 */
export async function moveInHistory(
  deadline: Deadline,
  browser: ProfileBrowser,
  move: HistoryMove,
  expectedUrl: string,
  config: SettleConfig,
): Promise<CapturedRevision> {
  const url = await landingUrl(deadline, browser, move);
  if (url === null) throw new HostError('target_changed', `there is no ${move === 'forward' ? 'next' : 'previous'} history entry any more; nothing moved`);
  if (url !== expectedUrl) throw new HostError('target_changed', `the ${move} entry is now ${url}, not ${expectedUrl}; nothing moved`);
  const origin = httpOriginOf(url);
  if (origin === undefined || !browser.confinement.leaseOrigins.includes(origin)) {
    throw new HostError('outside_run_origins', `the ${move} entry ${url} is outside the run's origins; nothing moved`);
  }
  return loadAndCapture(deadline, browser, config, origin, url, (page, timeout, signal) => {
    const options = { waitUntil: 'commit' as const, timeout, signal };
    return move === 'back' ? page.goBack(options) : move === 'forward' ? page.goForward(options) : page.reload(options);
  });
}

/** The origin of an http(s) URL without credentials, else undefined. */
function httpOriginOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.username !== '' || parsed.password !== '') return undefined;
    return parsed.origin;
  } catch {
    return undefined;
  }
}
