import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import type { BlockedKind, BlockedRequest } from '../../shared/observation.ts';
import { httpOrigin } from '../../shared/origin.ts';
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
  /**
   * Origins a person's sign-in window may go to besides the ceremony's own (`HOST_SIGN_IN_ORIGINS`);
   * undefined: any origin (its address is still checked like any page's).
   */
  readonly signIn?: readonly string[];
}

/**
 * The person's sign-in window while a ceremony waits for them (DESIGN.md section 18): its
 * documents may follow the sign-in top-level to other origins (an identity provider, MFA,
 * consent, back to the site), which stay un-navigable for everything else.
 */
export interface SignInWindow {
  /** Told each refusal while the window is open, in a sentence for the person (live view). */
  readonly onRefused: (sentence: string) => void;
  /** Told the origin of each top-level document the window is allowed to load (redirect hops included). */
  readonly onDocument: (origin: string) => void;
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
  #signInWindow: SignInWindow | undefined;
  /** The origin of the sign-in window's latest top-level document allowed to load. */
  #signInTopLevel: string | undefined;
  /** Origins the sign-in window could not reach while it was open. */
  readonly #signInRefused = new Set<string>();
  /** Main frame ids of the host's guarded pages: their blocked documents are navigations or forms, any other frame's are frames. */
  readonly #guardedMainFrames = new Set<string>();
  /** Main frame ids of the guarded pages the host opened for itself (a verification's loads). */
  readonly #temporaryMainFrames = new Set<string>();

  constructor(settings: EgressSettings, events: PageEvents) {
    this.#settings = settings;
    this.events = events;
  }

  /** The live lease's run origins (canonical `scheme://host[:port]`); `[]` when no lease lives. */
  set leaseOrigins(origins: readonly string[]) {
    this.#leaseOrigins = origins.map(canonical);
    this.#publicNames = new Set();
  }

  get leaseOrigins(): readonly string[] {
    return this.#leaseOrigins;
  }

  /** The open ceremony's origins (its origin and its sign-in page's); `[]` when none is open. */
  set ceremonyOrigins(origins: readonly string[]) {
    // Only real origins: anything else would break every later match against the list.
    this.#ceremonyOrigins = origins.flatMap((origin) => httpOrigin(origin) ?? []);
  }

  /**
   * Opens (or, with undefined, closes) the person's sign-in window: while it is open its
   * documents may come from any http(s) origin the operator allows for sign-in ({@link
   * EgressSettings.signIn}), not only navigable ones, and its refusals are told to the person
   * instead of being recorded for the agent's next observation.
   */
  set signInWindow(window: SignInWindow | undefined) {
    this.#signInWindow = window;
    this.#signInTopLevel = undefined;
    this.#signInRefused.clear();
  }

  /** The open sign-in window, if any. */
  get signInWindow(): SignInWindow | undefined {
    return this.#signInWindow;
  }

  /** Whether the open sign-in window was refused a connection to `origin` (so it never showed that origin's page). */
  signInRefused(origin: string): boolean {
    return this.#signInRefused.has(canonical(origin));
  }

  /** Origins documents may load from right now. */
  get navigableOrigins(): readonly string[] {
    return [...this.#leaseOrigins, ...this.#ceremonyOrigins].filter((origin) => !this.#settings.deny.includes(origin));
  }

  /**
   * Whether a document may load from `url`: undefined when it may, else why not. URLs that need
   * no network (about:, data:, blob:, javascript:) always may; anything else must be http(s) on a
   * navigable origin, or, while the sign-in window is open and the document is one `followsSignIn`
   * (not a page the host opened for itself), on an origin the operator allows for sign-in.
   */
  documentVerdict(url: string, followsSignIn = true): BlockReason | undefined {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return 'outside_run_origins';
    }
    if (LOCAL_SCHEMES.has(parsed.protocol)) return undefined;
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'outside_run_origins';
    // `evil.example.` is `evil.example`: the fully-qualified spelling names the same host.
    const origin = withoutTrailingDot(parsed);
    if (this.#settings.deny.includes(origin)) return 'operator_denied';
    if (this.navigableOrigins.includes(origin)) return undefined;
    if (this.#signInWindow === undefined || !followsSignIn) return 'outside_run_origins';
    const allowed = this.#settings.signIn;
    return allowed === undefined || allowed.includes(origin) ? undefined : 'outside_sign_in_origins';
  }

  /**
   * Records one refused request: for the agent's next observation (`blocked`), or, while the
   * sign-in window is open, told to the person instead when it is where the window itself went
   * (a navigation, a form, a window it opened, the connection of the document it was loading) and
   * dropped otherwise (a page's frames and other subresources), so nothing of the sign-in's pages
   * reaches the agent. The one place every refusal goes through.
   */
  refuse(entry: Omit<BlockedRequest, 'at'>): void {
    const window = this.#signInWindow;
    if (window === undefined) {
      this.events.blocked(entry);
      return;
    }
    const topLevel = entry.kind === 'subresource' ? entry.origin === this.#signInTopLevel : entry.kind !== 'frame';
    if (!topLevel) return;
    if (entry.kind !== 'popup') this.#signInRefused.add(entry.origin);
    window.onRefused(refusalInWords(entry));
  }

  /**
   * Notes that the sign-in window's document could not be reached at all (its name does not
   * resolve), so its origin is not counted among those the window visited. Nothing is reported.
   */
  unreached(origin: string): void {
    if (this.#signInWindow !== undefined && origin === this.#signInTopLevel) this.#signInRefused.add(origin);
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
    const host = hostname
      .replace(/^\[|\]$/g, '')
      .toLowerCase()
      .replace(/\.$/, '');
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
      // The host's own temporary pages (a verification's loads) never follow a person's sign-in.
      const verdict = this.documentVerdict(request.url, !this.#temporaryMainFrames.has(frameId));
      if (verdict === undefined) {
        const window = this.#signInWindow;
        if (window !== undefined && this.#personMainFrame(frameId) && !LOCAL_SCHEMES.has(new URL(request.url).protocol)) {
          this.#signInTopLevel = canonical(request.url);
          window.onDocument(this.#signInTopLevel);
        }
        session.send('Fetch.continueRequest', { requestId }).catch(() => {});
        return;
      }
      if (this.#temporaryMainFrames.has(frameId)) this.events.blocked({ origin: originOrNull(request.url), kind: 'navigation', reason: verdict });
      else this.#recordDocument(request.url, this.#guardedMainFrames.has(frameId) ? (request.method === 'GET' ? 'navigation' : 'form') : 'frame', verdict);
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
  async guardPage(page: Page, options: { temporary?: boolean } = {}): Promise<() => void> {
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
    if (mainFrameId !== undefined && options.temporary) this.#temporaryMainFrames.add(mainFrameId);
    return () => {
      if (mainFrameId !== undefined) this.#guardedMainFrames.delete(mainFrameId);
      if (mainFrameId !== undefined) this.#temporaryMainFrames.delete(mainFrameId);
      void session.detach().catch(() => {});
    };
  }

  /** Whether `frameId` is the main frame of a page the person's window shows (not one the host opened for itself). */
  #personMainFrame(frameId: string): boolean {
    return this.#guardedMainFrames.has(frameId) && !this.#temporaryMainFrames.has(frameId);
  }

  #recordDocument(url: string, kind: BlockedKind, reason: BlockReason): void {
    this.refuse({ origin: originOrNull(url), kind, reason });
  }
}

/** The origin of `url`, or `null` when it has none. */
function originOrNull(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'null';
  }
}

/** The origin of `url` with a fully-qualified host name's trailing dot dropped (`https://a.example.` is `https://a.example`). */
function withoutTrailingDot(url: URL): string {
  if (!url.hostname.endsWith('.')) return url.origin;
  return `${url.protocol}//${url.hostname.slice(0, -1)}${url.port === '' ? '' : `:${url.port}`}`;
}

/** Longest origin a refusal sentence names, in characters (a live-view notice holds 500). */
const MAX_NAMED_ORIGIN_CHARS = 200;

/** A refusal of the person's sign-in window in words (shown in the live view), at most 500 characters. */
function refusalInWords(entry: Omit<BlockedRequest, 'at'>): string {
  const named = entry.origin.length > MAX_NAMED_ORIGIN_CHARS ? `${entry.origin.slice(0, MAX_NAMED_ORIGIN_CHARS)}…` : entry.origin;
  const where = entry.origin === 'null' ? 'a page that is not a web address' : named;
  if (entry.kind === 'popup') {
    return `The sign-in page tried to open a new window (${where}). The live view shows one window only, so it was not opened; if the site offers it, choose to sign in in the same window.`;
  }
  switch (entry.reason) {
    case 'forbidden_address':
      return `The sign-in went to ${where}, which is on a loopback, private or link-local address. This browser host does not open such addresses unless its operator allows that origin (HOST_EGRESS_ALLOW).`;
    case 'operator_denied':
      return `The sign-in went to ${where}, which the operator of this browser host has blocked (HOST_EGRESS_DENY).`;
    case 'outside_sign_in_origins':
      return `The sign-in went to ${where}, which is not among the sign-in origins this browser host allows (HOST_SIGN_IN_ORIGINS).`;
    default:
      return `The sign-in page tried to open ${where}, which is not an http(s) address; it was not opened.`;
  }
}

function canonical(origin: string): string {
  try {
    return new URL(origin).origin;
  } catch {
    return origin;
  }
}
