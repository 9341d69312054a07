import type { Page, Request, Response } from 'playwright-core';

/**
 * Request types the settle snapshot waits for (ADR-0159): the document, scripts, stylesheets,
 * fetch/XHR and event streams. Images, fonts and media never hold settling back.
 */
const TRACKED_TYPES: ReadonlySet<string> = new Set(['document', 'script', 'stylesheet', 'fetch', 'xhr', 'eventsource']);

/**
 * The finite set of requests one settling waits for (ADR-0159). It holds the tracked requests in
 * flight when it was opened (settling entry, just before a navigation or an action is dispatched)
 * plus those started while it stays open, at most `cap`. Settling closes it once it has seen the
 * current document ready, so it holds what the dispatch itself started (a click handler's fetch)
 * and what a loading document starts before it is ready (its scripts, stylesheets, the data fetch
 * of its own startup script); once closed nothing joins it, so background polling never extends
 * it. Completed or failed requests leave it; an event stream leaves when its response headers
 * arrive, whoever opened it: an `EventSource`, or a `fetch` / XHR whose response is
 * `text/event-stream` (how chat and AI UIs stream). Other long bodies (NDJSON, say) keep counting. A new main-frame document empties it and opens it again, with a fresh count, until
 * settling has seen that document ready.
 */
export interface RequestSnapshot {
  /** Requests that joined the current document's set (at most the cap). */
  readonly pendingAtEntry: number;
  /** True when more than `cap` requests would have joined: the set cannot be trusted. */
  readonly overflow: boolean;
  /** Requests still pending. */
  readonly pending: number;
  /** Stops new requests from joining (until a new document opens it again). Idempotent. */
  close(): void;
  /** Resolves when no request is pending (at once if none is). */
  drained(): Promise<void>;
  /** Detaches from the tracker; call when settling ends. */
  dispose(): void;
}

/** Most URLs a document trail keeps (the newest). */
const MAX_TRAIL = 16;

/** What {@link PageTraffic.trail} answers: URLs oldest first, and the current document's HTTP status. */
export interface DocumentTrail {
  readonly urls: readonly string[];
  readonly status: number | undefined;
}

/**
 * Follows one page's traffic through Playwright's events: the tracked requests in flight
 * (`request`, `requestfinished`, `requestfailed`, `response`), handing out
 * {@link RequestSnapshot}s for settling, and the main-frame documents it loads.
 *
 * Playwright's `framenavigated` fires for same-document navigations too (pushState, fragments),
 * so a new document is a main-frame `framenavigated` that follows a main-frame navigation
 * request; those are the only ones that replace the document.
 */
export class PageTraffic {
  readonly #inFlight = new Set<Request>();
  #trail: string[] = [];
  #status: number | undefined;
  readonly #snapshots = new Set<Snapshot>();
  #navigationRequested = false;
  #documents = 0;
  #documentWaiters: Array<() => void> = [];

  /** How many new main-frame documents have committed since attaching; grows by one each. */
  get documents(): number {
    return this.#documents;
  }

  /** Resolves at the next new main-frame document, or as soon as `signal` aborts. */
  nextDocument(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.#documentWaiters = this.#documentWaiters.filter((waiter) => waiter !== wake);
        resolve();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#documentWaiters.push(wake);
    });
  }

  /** Starts following `page`; returns a function that stops following it. */
  attach(page: Page): () => void {
    const isMainNavigation = (request: Request): boolean => request.isNavigationRequest() && request.frame().parentFrame() === null;
    const onRequest = (request: Request): void => {
      if (isMainNavigation(request)) {
        this.#navigationRequested = true;
        this.#visit(request.url());
      }
      if (!TRACKED_TYPES.has(request.resourceType())) return;
      this.#inFlight.add(request);
      for (const snapshot of this.#snapshots) snapshot.offer(request);
    };
    const onDone = (request: Request): void => this.#forget(request);
    const onFailed = (request: Request): void => {
      if (isMainNavigation(request)) this.#navigationRequested = false;
      this.#forget(request);
    };
    const onResponse = (response: Response): void => {
      if (isMainNavigation(response.request())) this.#status = response.status();
      if (isEventStream(response)) this.#forget(response.request());
    };
    const onNavigated = (frame: { parentFrame(): unknown; url(): string }): void => {
      if (frame.parentFrame() !== null) return;
      // Same-document navigations (a client-side router's redirect) are part of the trail too.
      this.#visit(frame.url());
      if (!this.#navigationRequested) return;
      this.#navigationRequested = false;
      this.#newDocument();
    };
    page.on('request', onRequest);
    page.on('requestfinished', onDone);
    page.on('requestfailed', onFailed);
    page.on('response', onResponse);
    page.on('framenavigated', onNavigated);
    return () => {
      page.off('request', onRequest);
      page.off('requestfinished', onDone);
      page.off('requestfailed', onFailed);
      page.off('response', onResponse);
      page.off('framenavigated', onNavigated);
      this.#inFlight.clear();
    };
  }

  /**
   * The main-frame documents and URLs the page went through since the last navigation or act
   * began ({@link restartTrail}): navigation requests, each redirect hop included, and main-frame
   * URL changes, same-document ones included (the newest {@link MAX_TRAIL}, repeats collapsed);
   * and the HTTP status of the current main-frame document. Reading it changes nothing, so a wall
   * observed again keeps its evidence. The sign-in evidence reads it: a document the call asked
   * for that was sent on to a sign-in page (issue 17).
   */
  trail(): DocumentTrail {
    return { urls: [...this.#trail], status: this.#status };
  }

  /** A navigation or act begins: the trail starts again (the current document's status stays). */
  restartTrail(): void {
    this.#trail = [];
  }

  #visit(url: string): void {
    if (this.#trail[this.#trail.length - 1] === url) return;
    this.#trail.push(url);
    if (this.#trail.length > MAX_TRAIL) this.#trail.shift();
  }

  /**
   * Opens a snapshot of the tracked requests in flight now, capped at `cap` (ADR-0159: 256).
   * New requests join it until it is closed; a new main-frame document restarts it.
   */
  open(cap: number): RequestSnapshot {
    const snapshot = new Snapshot(cap, () => this.#snapshots.delete(snapshot));
    this.#snapshots.add(snapshot);
    for (const request of this.#inFlight) snapshot.offer(request);
    return snapshot;
  }

  #forget(request: Request): void {
    this.#inFlight.delete(request);
    for (const snapshot of this.#snapshots) snapshot.remove(request);
  }

  /** A new main-frame document: requests of the old one no longer hold anything back. */
  #newDocument(): void {
    this.#documents += 1;
    const waiters = this.#documentWaiters;
    this.#documentWaiters = [];
    for (const wake of waiters) wake();
    for (const request of this.#inFlight) {
      if (!request.isNavigationRequest()) this.#inFlight.delete(request);
    }
    for (const snapshot of this.#snapshots) snapshot.restart();
  }
}

/**
 * True for a response that opens an event stream (ADR-0159: it leaves the request set at its
 * headers): an `EventSource` request, or any tracked request whose `Content-Type` is
 * `text/event-stream`, parameters and case aside.
 */
function isEventStream(response: Response): boolean {
  if (response.request().resourceType() === 'eventsource') return true;
  const type = response.headers()['content-type'] ?? '';
  return type.split(';', 1)[0]!.trim().toLowerCase() === 'text/event-stream';
}

class Snapshot implements RequestSnapshot {
  readonly #cap: number;
  readonly #detach: () => void;
  readonly #pending = new Set<Request>();
  #open = true;
  #disposed = false;
  #joined = 0;
  #overflow = false;
  #waiters: Array<() => void> = [];

  constructor(cap: number, detach: () => void) {
    this.#cap = cap;
    this.#detach = detach;
  }

  get pendingAtEntry(): number {
    return this.#joined;
  }

  get overflow(): boolean {
    return this.#overflow;
  }

  get pending(): number {
    return this.#pending.size;
  }

  offer(request: Request): void {
    if (!this.#open || this.#pending.has(request)) return;
    if (this.#joined >= this.#cap) {
      this.#overflow = true;
      return;
    }
    this.#joined += 1;
    this.#pending.add(request);
  }

  remove(request: Request): void {
    if (this.#pending.delete(request)) this.#wakeIfDrained();
  }

  /** A new document: the old set no longer holds anything back; the new one's loading may join. */
  restart(): void {
    if (this.#disposed) return;
    this.#pending.clear();
    this.#joined = 0;
    this.#overflow = false;
    this.#open = true;
    this.#wakeIfDrained();
  }

  close(): void {
    this.#open = false;
  }

  drained(): Promise<void> {
    if (this.#pending.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  dispose(): void {
    this.#open = false;
    this.#disposed = true;
    this.#detach();
    this.#pending.clear();
    this.#wakeIfDrained();
  }

  #wakeIfDrained(): void {
    if (this.#pending.size > 0) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
