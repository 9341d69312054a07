import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import type { BlockedKind, BlockedRequest } from '../../shared/observation.ts';
import type { PageEvents } from '../page/events.ts';
import { isAddressLiteral, isLinkLocalAddress, isPublicAddress, type PinnedAddress, resolveChecked } from './address-policy.ts';

/** Origins the operator configured for this host (README "Confinement"). */
export interface EgressSettings {
  /** Origins pages may reach as subresources even on a non-public address (an internal CDN, say). */
  readonly allow: readonly string[];
  /** Origins pages never reach, not even when a run names them. */
  readonly deny: readonly string[];
  /** The host's own listening ports: never reachable from a page on a non-public address. */
  readonly hostPorts: () => readonly number[];
}

/** No operator-configured origins and no known host ports. */
export const NO_EGRESS_SETTINGS: EgressSettings = { allow: [], deny: [], hostPorts: () => [] };

/** Why a request was refused. */
export type BlockReason = BlockedRequest['reason'];

/** A connection's verdict: the pinned address to connect to, or why not. */
export type ConnectionVerdict = { readonly pinned: PinnedAddress; readonly refused?: undefined } | { readonly refused: BlockReason | 'unresolvable' };

/** Schemes a navigation may use without any network request (nothing leaves the browser). */
const LOCAL_SCHEMES = new Set(['about:', 'data:', 'blob:', 'javascript:']);

/**
 * The boundary between one profile's pages and the network (README "Confinement"; DESIGN.md
 * section 5, "egress ... checks remain"), enforced in the host before any byte leaves:
 *
 * - documents (top-level navigations, frames, form submissions, each redirect hop) may only
 *   load from the navigable origins: the live lease's run origins, and while a sign-in ceremony
 *   is open, the ceremony's origin and its sign-in page's origin; never an operator-denied one.
 *   Between leases nothing is navigable.
 * - every connection (subresources, fetches, WebSockets, documents too) goes through the
 *   browser's egress proxy, which allows public addresses, and non-public ones (loopback,
 *   private, link-local, metadata) only for a navigable or operator-allowed host and port, never
 *   the host's own ports (see {@link connection}).
 * - pages the page opens (popups) are refused: their documents never load, and the host closes
 *   them as soon as Playwright reports them (a scripted about:blank popup runs until then).
 *
 * Every refusal is recorded in `events` and reported on the next observation (`blocked`).
 */
export class Confinement {
  readonly events: PageEvents;
  readonly #settings: EgressSettings;
  #leaseOrigins: readonly string[] = [];
  /** Host names that resolved to public addresses only during this lease (rebinding guard). */
  #publicNames = new Set<string>();
  #ceremonyOrigins: readonly string[] = [];
  /** Main frame ids of the host's guarded pages: their blocked documents are navigations or forms, any other frame's are frames. */
  readonly #guardedMainFrames = new Set<string>();

  constructor(settings: EgressSettings, events: PageEvents) {
    this.#settings = settings;
    this.events = events;
  }

  /** The live lease's run origins (canonical `scheme://host[:port]`); `[]` when no lease lives. */
  set leaseOrigins(origins: readonly string[]) {
    this.#leaseOrigins = origins.map(canonical);
    this.#publicNames = new Set();
  }

  /** The open ceremony's origins (its origin and its sign-in page's); `[]` when none is open. */
  set ceremonyOrigins(origins: readonly string[]) {
    this.#ceremonyOrigins = origins.map(canonical);
  }

  /** Origins documents may load from right now. */
  get navigableOrigins(): readonly string[] {
    return [...this.#leaseOrigins, ...this.#ceremonyOrigins].filter((origin) => !this.#settings.deny.includes(origin));
  }

  /**
   * Whether a document may load from `url`: undefined when it may, else why not. URLs that need
   * no network (about:, data:, blob:, javascript:) always may; anything else must be http(s) on a
   * navigable origin.
   */
  documentVerdict(url: string): BlockReason | undefined {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return 'outside_run_origins';
    }
    if (LOCAL_SCHEMES.has(parsed.protocol)) return undefined;
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'outside_run_origins';
    if (this.#settings.deny.includes(parsed.origin)) return 'operator_denied';
    return this.navigableOrigins.includes(parsed.origin) ? undefined : 'outside_run_origins';
  }

  /**
   * The verdict on one connection to `hostname:port` (`plainHttp` for a plain HTTP request, which
   * matches http origins only), made before it is opened: an
   * operator-denied host and port is refused; the host's own ports on a non-public address are
   * refused; a navigable or operator-allowed host and port may use any address (a host name of
   * theirs never a link-local one, and never a non-public one after it answered public during
   * the lease: DNS rebinding); anything else must resolve to public addresses only. The answer
   * pins the address to connect to.
   */
  async connection(hostname: string, port: number, plainHttp = false): Promise<ConnectionVerdict> {
    const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
    // A plain HTTP request is of an http origin; a tunnel may be https, wss, or ws of an http origin.
    const matches = (origin: string): boolean => {
      const url = new URL(origin);
      if (plainHttp && url.protocol !== 'http:') return false;
      const originPort = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
      return url.hostname.replace(/^\[|\]$/g, '') === host && originPort === port;
    };
    if (this.#settings.deny.some(matches)) return { refused: 'operator_denied' };
    const trusted = this.navigableOrigins.some(matches) || this.#settings.allow.some(matches);
    const ownPort = this.#settings.hostPorts().includes(port);
    if (ownPort && isAddressLiteral(host) && !isPublicAddress(host)) return { refused: 'forbidden_address' };
    const resolved = await resolveChecked(host, trusted && !ownPort);
    if (resolved === 'unresolvable') return { refused: 'unresolvable' };
    if (resolved === 'forbidden_address') return { refused: 'forbidden_address' };
    if (!resolved.public && !isAddressLiteral(host)) {
      // A name the run trusts may be an intranet site, but never the metadata service, and never
      // a name that answered public before (DNS rebinding of the run's own site).
      if (isLinkLocalAddress(resolved.address)) return { refused: 'forbidden_address' };
      if (this.#publicNames.has(host)) return { refused: 'forbidden_address' };
    } else if (resolved.public) {
      this.#publicNames.add(host);
    }
    return { pinned: resolved };
  }

  /**
   * Refuses every window a page opens (README "Confinement": popups are refused), before it loads
   * anything. A browser-level CDP session auto-attaches to each new target paused
   * (`waitForDebuggerOnStart`), notes those a page opened (a popup, `noopener` ones included:
   * they have an opener) and lets go of every target at once; the same session intercepts
   * document requests browser-wide (CDP Fetch, request stage): it fails those of a popup's main
   * frame, so a popup never loads a document, and lets every other one load only from a navigable
   * origin ({@link documentVerdict}; the one document check); the host closes the popup when Playwright reports it
   * (ProfileBrowser). Nothing here closes a target: a popup shares its opener's renderer, and a
   * target closed while it still waits for its debugger leaves that renderer's main thread stuck,
   * so the opener's page stopped answering (seen under load when this closed popups itself).
   * @throws Error when the browser session cannot be opened (the launch fails then).
   */
  async refusePopups(context: BrowserContext): Promise<void> {
    const browser = context.browser();
    if (browser === null) throw new Error('no browser-level session for popup refusal');
    const session = await browser.newBrowserCDPSession();
    /** Target ids of popups (a page's main frame id is its target id). */
    const popups = new Set<string>();
    session.on('Target.attachedToTarget', (event) => {
      const { sessionId, targetInfo } = event as { sessionId: string; targetInfo: { targetId: string; type: string; openerId?: string } };
      if (targetInfo.type === 'page' && targetInfo.openerId !== undefined) popups.add(targetInfo.targetId);
      session.send('Target.detachFromTarget', { sessionId }).catch(() => {});
    });
    session.on('Target.targetDestroyed', (event) => {
      popups.delete((event as { targetId: string }).targetId);
    });
    session.on('Fetch.requestPaused', (event) => {
      const { requestId, frameId, request } = event as { requestId: string; frameId: string; request: { url: string; method: string } };
      if (popups.has(frameId)) {
        session.send('Fetch.failRequest', { requestId, errorReason: 'BlockedByClient' }).catch(() => {});
        return;
      }
      // Every other document (the host's pages, their frames, a frame a page writes into a popup
      // before it closes) may come from a navigable origin only.
      const verdict = this.documentVerdict(request.url);
      if (verdict === undefined) {
        session.send('Fetch.continueRequest', { requestId }).catch(() => {});
        return;
      }
      this.#recordDocument(request.url, this.#guardedMainFrames.has(frameId) ? (request.method === 'GET' ? 'navigation' : 'form') : 'frame', verdict);
      // Aborted, not BlockedByClient: an aborted navigation commits no error page, so a page whose
      // own navigation was stopped stays the page it was (and an agent's load fails as it should).
      session.send('Fetch.failRequest', { requestId, errorReason: 'Aborted' }).catch(() => {});
    });
    await session.send('Target.setDiscoverTargets', { discover: true });
    await session.send('Fetch.enable', { patterns: [{ urlPattern: '*', resourceType: 'Document', requestStage: 'Request' }] });
    await session.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true });
  }

  /**
   * Guards one of the host's own pages. Its documents are checked browser-wide (see
   * {@link refusePopups}: CDP Fetch, request stage, which also stops each redirect hop; a hop to
   * an origin that is not navigable fails before it is sent); this names its main frame to that
   * check (its blocked documents are navigations or forms, other frames' are frames) and records
   * each window it asks for (`Page.windowOpen`, reported as a refused popup).
   * @returns a function that stops guarding; never throws.
   */
  async guardPage(page: Page): Promise<() => void> {
    let session: CDPSession;
    try {
      session = await page.context().newCDPSession(page);
    } catch {
      return () => {};
    }
    let mainFrameId: string | undefined;
    try {
      const tree = (await session.send('Page.getFrameTree')) as { frameTree: { frame: { id: string } } };
      mainFrameId = tree.frameTree.frame.id;
    } catch {
      mainFrameId = undefined;
    }
    // The page asking for a window (window.open, target=_blank) says where: the popup itself is
    // refused (see refusePopups).
    session.on('Page.windowOpen', (event) => {
      const { url } = event as { url: string };
      this.#recordDocument(url, 'popup', 'popup_refused');
    });
    await session.send('Page.enable').catch(() => {});
    if (mainFrameId !== undefined) this.#guardedMainFrames.add(mainFrameId);
    return () => {
      if (mainFrameId !== undefined) this.#guardedMainFrames.delete(mainFrameId);
      void session.detach().catch(() => {});
    };
  }

  #recordDocument(url: string, kind: BlockedKind, reason: BlockReason): void {
    let origin: string;
    try {
      origin = new URL(url).origin;
    } catch {
      origin = 'null';
    }
    this.events.blocked({ origin, kind, reason });
  }
}

function canonical(origin: string): string {
  try {
    return new URL(origin).origin;
  } catch {
    return origin;
  }
}
