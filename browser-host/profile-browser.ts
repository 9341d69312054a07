import type { BrowserContext, Page } from 'playwright-core';
import type { FrameSummary, SettleReport } from '../shared/observation.ts';
import { Deadline } from './deadline.ts';
import { Confinement, type EgressSettings } from './egress/confinement.ts';
import { type EgressProxy, startEgressProxy } from './egress/egress-proxy.ts';
import { firstLineOf, HostError } from './host-error.ts';
import { PageEvents } from './page-events.ts';
import { PageTraffic } from './page-traffic.ts';
import { type LaunchOptions, launchProfileContext } from './profiles.ts';
import { SerialLock } from './serial-lock.ts';

/** Longest leaving a page for `about:blank` at a lease's end may take, in ms. */
const BLANK_TIMEOUT_MS = 5_000;

/** No operator-configured origins and no known host ports. */
const NO_EGRESS_SETTINGS: EgressSettings = { allow: [], deny: [], hostPorts: () => [] };

/**
 * One full capture of the page: the revision it was given, the document's URL and title, the
 * AI-mode aria snapshot split into lines (one line is one node), its frames and the report of the
 * settling that preceded it (`not_waited` for a plain observe).
 */
export interface CapturedRevision {
  readonly revision: number;
  readonly url: string;
  readonly title: string;
  readonly lines: readonly string[];
  /** The page's iframes, in snapshot order; foreign ones withheld from `lines` (frame-confinement.ts). */
  readonly frames: readonly FrameSummary[];
  readonly settle: SettleReport;
}

/**
 * One profile's browser (a persistent context) and the page the host drives in it, with the
 * state every page operation shares: the serial lock, the traffic tracker for settling, the
 * latest capture and whether earlier references may no longer be trusted.
 *
 * Revisions are per page and monotonic; they continue from `firstRevision` so a relaunched
 * profile never reuses a number.
 */
export class ProfileBrowser {
  readonly profileId: string;
  readonly lock = new SerialLock();
  readonly traffic = new PageTraffic();
  /** What the page tried that the host blocked or answered, until the next observation reports it. */
  readonly events: PageEvents;
  /** The egress confinement of every page of this browser (README "Confinement"). */
  readonly confinement: Confinement;
  readonly #context: BrowserContext;
  readonly #proxy: EgressProxy;
  /** Pages the host opened itself; any other page is a popup and is closed. */
  readonly #ownPages = new WeakSet<Page>();
  #opening = 0;
  #page: Page | undefined;
  #detachPage: () => void = () => {};
  #revision: number;
  #latest: CapturedRevision | undefined;
  #invalidation: string | undefined;
  #closing: Promise<void> | undefined;
  #capturesRunning = 0;

  private constructor(profileId: string, context: BrowserContext, firstRevision: number, confinement: Confinement, proxy: EgressProxy) {
    this.profileId = profileId;
    this.#context = context;
    this.#revision = firstRevision;
    this.confinement = confinement;
    this.events = confinement.events;
    this.#proxy = proxy;
  }

  /**
   * Launches Chromium for `profileId` (see {@link launchProfileContext}) behind its own egress
   * proxy and confinement (README "Confinement"; nothing is navigable until a lease names its
   * run's origins), and adopts its first page.
   * @throws HostError('host_unavailable') when Chromium or its proxy does not start before the deadline.
   */
  static async launch(
    deadline: Deadline,
    profileId: string,
    options: LaunchOptions,
    firstRevision = 0,
    egress: EgressSettings = NO_EGRESS_SETTINGS,
  ): Promise<ProfileBrowser> {
    const confinement = new Confinement(egress, new PageEvents());
    let proxy: EgressProxy;
    try {
      proxy = await startEgressProxy(confinement);
    } catch (error) {
      throw new HostError('host_unavailable', `the egress proxy for profile ${profileId} did not start: ${firstLineOf(error)}`);
    }
    let context: BrowserContext;
    try {
      context = await launchProfileContext(deadline, profileId, { ...options, proxyServer: proxy.url });
    } catch (error) {
      await proxy.close();
      throw error;
    }
    const browser = new ProfileBrowser(profileId, context, firstRevision, confinement, proxy);
    for (const page of context.pages()) browser.#ownPages.add(page);
    context.on('page', (page) => browser.#onNewPage(page));
    await confinement.confineContext(context, (page) => browser.#ownPages.has(page));
    const first = context.pages()[0];
    if (first) await browser.#adopt(first);
    return browser;
  }

  /** A page the host opens claims the next new page; any other new page is a popup, closed before it loads. */
  #onNewPage(page: Page): void {
    if (this.#opening > 0 || this.#ownPages.has(page)) {
      this.#ownPages.add(page);
      return;
    }
    void page.close().catch(() => {});
  }

  /** Opens a page of the host's own, guarded like the first. */
  async #openOwnPage(deadline: Deadline): Promise<Page> {
    this.#opening += 1;
    const opening = this.#context.newPage();
    try {
      const page = await deadline.race(opening);
      this.#ownPages.add(page);
      return page;
    } catch (error) {
      // A page that opens after the race was lost is closed, never left behind.
      void opening.then((late) => late.close()).catch(() => {});
      throw error;
    } finally {
      void opening
        .finally(() => {
          this.#opening -= 1;
        })
        .catch(() => {});
    }
  }

  /** Calls `listener` once when the browser goes away (closed by us, crashed or quit). */
  onClosed(listener: () => void): void {
    this.#context.once('close', listener);
  }

  /**
   * True while an operation runs or waits on this page, or a capture's Playwright call has not
   * finished: never evict such a browser.
   */
  get busy(): boolean {
    return this.lock.held > 0 || this.#capturesRunning > 0;
  }

  /**
   * Captures whose Playwright calls have not finished yet. 0 whenever no operation runs: a
   * cancelled capture is joined before its operation answers (ADR-0159); it stays above 0 only
   * when a capture outlived even its join's grace period.
   */
  get capturesRunning(): number {
    return this.#capturesRunning;
  }

  /** Counts `capture` in {@link capturesRunning} until it settles; returns it unchanged. */
  trackCapture<T>(capture: Promise<T>): Promise<T> {
    this.#capturesRunning += 1;
    const settled = (): void => {
      this.#capturesRunning -= 1;
    };
    capture.then(settled, settled);
    return capture;
  }

  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * The page operations drive. When a person or the site closed it, a fresh page is opened and
   * earlier references are invalidated (`page_changed` until the next full capture).
   * @throws HostError('page_changed') when the browser is gone.
   */
  async page(deadline: Deadline): Promise<Page> {
    if (this.#page && !this.#page.isClosed()) return this.#page;
    if (this.closed) throw new HostError('page_changed', 'the browser was closed');
    try {
      const page = await this.#openOwnPage(deadline);
      await this.#adopt(page);
      this.invalidate('the page was closed and reopened');
      return page;
    } catch (error) {
      if (error instanceof HostError) throw error;
      throw new HostError('page_changed', `could not reopen the page: ${firstLineOf(error)}`);
    }
  }

  /** The page operations drive, if it is open; never opens one (see {@link page}). */
  get openPage(): Page | undefined {
    return this.#page && !this.#page.isClosed() ? this.#page : undefined;
  }

  /**
   * A new page in this profile's context for a temporary load (a verification's protected load,
   * ADR-0164), apart from the page operations drive; dialogs on it are dismissed. The caller
   * closes it.
   * @throws HostError('page_changed') when the browser is gone or the page cannot be opened in time.
   */
  async temporaryPage(deadline: Deadline): Promise<Page> {
    if (this.closed) throw new HostError('page_changed', 'the browser was closed');
    try {
      const page = await this.#openOwnPage(deadline);
      page.on('dialog', (dialog) => void dialog.dismiss().catch(() => {}));
      const unguard = await this.confinement.guardPage(page);
      page.once('close', unguard);
      return page;
    } catch (error) {
      if (error instanceof HostError && error.code !== 'deadline_exceeded') throw error;
      throw new HostError('page_changed', `could not open a temporary page: ${firstLineOf(error)}`);
    }
  }

  /** The latest full capture's revision (0 before the first). */
  get revision(): number {
    return this.#revision;
  }

  /** The latest full capture, the only one continuations may read. */
  get latest(): CapturedRevision | undefined {
    return this.#latest;
  }

  /**
   * Records a successful full capture as the next revision; clears any invalidation. A capture
   * without `frames` records none.
   */
  recordCapture(capture: Omit<CapturedRevision, 'revision' | 'frames'> & Partial<Pick<CapturedRevision, 'frames'>>): CapturedRevision {
    this.#revision += 1;
    this.#latest = { frames: [], ...capture, revision: this.#revision };
    this.#invalidation = undefined;
    return this.#latest;
  }

  /**
   * Marks the references of the latest revision untrustworthy (ADR-0159: a capture failed or
   * was cancelled, the page was replaced, or a new lease began): acts and continuation reads fail
   * `page_changed` until a fresh full capture succeeds.
   */
  invalidate(reason: string): void {
    this.#invalidation = reason;
  }

  /** Why the latest references cannot be used, if they cannot. */
  get invalidation(): string | undefined {
    return this.#invalidation;
  }

  /**
   * Leaves whatever page the last lease was on for `about:blank`, in the page's turn (after any
   * operation still running), so no page keeps running after its run (README "Confinement").
   * Bounded by 5,000 ms; never throws (a page that does not go is replaced by the next lease's
   * first operation, since a new lease invalidates references anyway).
   */
  async blank(): Promise<void> {
    const deadline = Deadline.after(BLANK_TIMEOUT_MS);
    try {
      await this.lock.run(deadline, async () => {
        const page = this.openPage;
        if (page === undefined || page.url() === 'about:blank') return;
        await page.goto('about:blank', { timeout: Math.max(1, deadline.remainingMs()), signal: deadline.signal });
        this.invalidate('the last lease ended');
      });
    } catch {
      // best effort
    } finally {
      deadline.dispose();
    }
  }

  /** Closes the browser (idempotent); waits for Chromium to exit. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#detachPage();
      await this.#context.close().catch(() => {});
      await this.#proxy.close();
    })();
    return this.#closing;
  }

  async #adopt(page: Page): Promise<void> {
    this.#detachPage();
    this.#page = page;
    const unguard = await this.confinement.guardPage(page);
    const detachTraffic = this.traffic.attach(page);
    // A dialog would block every later evaluation and capture; the host answers none of them.
    const onDialog = (dialog: { dismiss(): Promise<void> }): void => {
      dialog.dismiss().catch(() => {});
    };
    page.on('dialog', onDialog);
    this.#detachPage = () => {
      unguard();
      detachTraffic();
      page.off('dialog', onDialog);
    };
  }
}
