import type { BrowserContext, Page } from 'playwright-core';
import type { ErrorCode } from '../shared/errors.ts';
import { Deadline } from './deadline.ts';
import { Confinement, NO_EGRESS_SETTINGS } from './egress/confinement.ts';
import { type EgressProxy, startEgressProxy } from './egress/egress-proxy.ts';
import { firstLineOf, HostError } from './host-error.ts';
import { PageDialogs } from './page/dialogs.ts';
import { PageDownloads } from './page/downloads.ts';
import { PageEvents } from './page/events.ts';
import { OwnPages } from './page/own-pages.ts';
import { closePage, pageAnswers } from './page/recovery.ts';
import { PageTraffic } from './page/traffic.ts';
import { type LaunchOptions, launchProfileContext } from './profiles.ts';
import { ScreenshotShelf } from './screenshots.ts';
import { SerialLock } from './serial-lock.ts';
import { RevisionLedger } from './snapshot/captured-revision.ts';
import { CLOSED_SHADOW_ROOTS_SCRIPT, ClosedRootProbe } from './snapshot/marks.ts';

/** Longest opening the replacement of an ended page may take, in ms. */
const SPARE_PAGE_MS = 5_000;
/** Longest leaving a page for `about:blank` at a lease's end may take, in ms. */
const LIFECYCLE_TIMEOUT_MS = 5_000;
/**
 * How long the page gets to answer a trivial evaluation after an operation on it failed, in ms;
 * a page that does not has stopped answering and is ended. Long enough that a page busy for a few
 * seconds (a heavy script) survives and is observed afterwards (capture-cancellation.test.ts).
 */
const HUNG_PAGE_MS = 5_000;

/**
 * One profile's browser (a persistent context) and the page the host drives in it, with the
 * state every page operation shares: the serial lock, the traffic tracker for settling, the
 * latest capture and whether earlier references may no longer be trusted.
 *
 * The driven page's dialogs are answered by {@link PageDialogs}. A page that cannot go on (a
 * dialog loop, a crashed renderer, a main thread that stopped answering) is ended: closed, its
 * references invalidated, and replaced by a fresh page at the next {@link page}; an operation it
 * was ended under fails (see {@link run}). The browser itself is relaunched only when it is gone
 * (crashed or quit): it then closes itself, admission forgets it and interrupts its lease, and the
 * next `lease.acquire` launches a new one.
 *
 * Revisions are per page and monotonic ({@link revisions}); they continue from `firstRevision`
 * so a relaunched profile never reuses a number.
 */
export class ProfileBrowser {
  readonly profileId: string;
  readonly lock = new SerialLock();
  readonly traffic = new PageTraffic();
  /** The driven page's captures: the latest revision and whether its references still hold. */
  readonly revisions: RevisionLedger;
  /** What the page tried that the host blocked or answered, until the next observation reports it. */
  readonly events: PageEvents;
  /** The egress confinement of every page of this browser (README "Confinement"). */
  readonly confinement: Confinement;
  /** Closed shadow roots the host could not open, counted once per document (snapshot/marks.ts). */
  readonly closedRoots = new ClosedRootProbe();
  /** Screenshots taken right after acts and navigations, for the owner's console (issue 15). */
  readonly screenshots = new ScreenshotShelf();
  /** Files the driven page downloaded, until the edge reads them or the lease ends (issue 33). */
  readonly downloads: PageDownloads;
  readonly #context: BrowserContext;
  readonly #proxy: EgressProxy;
  /** Pages the host opened itself; any other page is a popup and is closed. */
  readonly #ownPages: OwnPages;
  readonly #dialogs: PageDialogs;
  #lifecycle: Promise<void> = Promise.resolve();
  /** The page opened to replace one that was ended, until the next operation adopts it. */
  #spare: Page | undefined;
  #page: Page | undefined;
  #detachPage: () => void = () => {};
  /** Why the last driven page went away, until a fresh one is adopted. */
  #ended: string | undefined;
  /** The operation {@link run} is running, if any (a token). */
  #operation: object | undefined;
  /** The operation {@link page} last handed the driven page to. */
  #handedTo: object | undefined;
  /** The operation the last driven page went away under after it was handed the page, if one did. */
  #lostIn: object | undefined;
  /** The check that the page still answers after a failed operation, while it runs. */
  #probing: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  #capturesRunning = 0;

  private constructor(profileId: string, context: BrowserContext, firstRevision: number, confinement: Confinement, proxy: EgressProxy, files: PageDownloads) {
    this.profileId = profileId;
    this.downloads = files;
    this.#context = context;
    this.#ownPages = new OwnPages(context);
    this.revisions = new RevisionLedger(firstRevision);
    this.confinement = confinement;
    this.events = confinement.events;
    this.#dialogs = new PageDialogs(this.events);
    this.#proxy = proxy;
  }

  /**
   * Launches Chromium for `profileId` (see {@link launchProfileContext}) behind its own egress
   * proxy and confinement (README "Confinement"; nothing is navigable until a lease names its
   * run's origins), and adopts its first page.
   * @throws HostError('host_unavailable') when Chromium or its proxy does not start before the deadline.
   */
  static async launch(deadline: Deadline, profileId: string, options: LaunchOptions, firstRevision = 0): Promise<ProfileBrowser> {
    const confinement = new Confinement(options.egress ?? NO_EGRESS_SETTINGS, new PageEvents());
    let proxy: EgressProxy;
    let downloads: PageDownloads;
    try {
      [proxy, downloads] = await Promise.all([startEgressProxy(confinement), PageDownloads.create()]);
    } catch (error) {
      throw new HostError('host_unavailable', `the egress proxy or download directory for profile ${profileId} did not start: ${firstLineOf(error)}`);
    }
    let context: BrowserContext;
    try {
      context = await launchProfileContext(deadline, profileId, { ...options, proxyServer: proxy.url, downloadsPath: downloads.directory });
    } catch (error) {
      await Promise.all([proxy.close(), downloads.close()]);
      throw error;
    }
    const browser = new ProfileBrowser(profileId, context, firstRevision, confinement, proxy, downloads);
    // Chromium crashed or quit: nothing is left to drive, and the egress proxy goes with it.
    context.once('close', () => void browser.close());
    try {
      // Closed shadow roots opened to the host's own reads (snapshot/marks.ts), in every document from now on.
      await context.addInitScript(CLOSED_SHADOW_ROOTS_SCRIPT);
    } catch (error) {
      await browser.close();
      throw new HostError('host_unavailable', `the page scripts of profile ${profileId} could not be installed: ${firstLineOf(error)}`);
    }
    try {
      await confinement.refusePopups(context);
    } catch (error) {
      await browser.close();
      throw new HostError('host_unavailable', `popups of profile ${profileId} could not be refused: ${firstLineOf(error)}`);
    }
    const first = context.pages()[0];
    if (first) await browser.#adopt(first);
    return browser;
  }

  /** Opens a page of the host's own ({@link OwnPages.open}), guarded like the first. */
  #openOwnPage = (deadline: Deadline): Promise<Page> => this.#ownPages.open(deadline);

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
    const settled = (): number => (this.#capturesRunning -= 1);
    capture.then(settled, settled);
    return capture;
  }

  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * The page operations drive. When it went away (a person or the site closed it, or the host
   * ended it), a fresh page is opened and earlier references are invalidated (`page_changed`
   * until the next full capture); but not for the operation it went away under, which must not
   * go on with another page (an operation that had not been handed the page yet gets the fresh one).
   * While the page is being checked after a failed operation (see {@link run}), waits for the
   * verdict first, so a page that stopped answering is replaced rather than used.
   * @throws HostError('page_changed') when the browser is gone, or the page went away during the
   *   operation {@link run} is running; HostError('deadline_exceeded') when the check outlasts
   *   `deadline`.
   */
  async page(deadline: Deadline): Promise<Page> {
    if (this.#probing !== undefined) await deadline.race(this.#probing);
    if (this.#operation !== undefined && this.#lostIn === this.#operation) {
      throw new HostError('page_changed', `the page went away during this operation: ${this.#ended ?? 'it was closed'}`);
    }
    if (this.#page && !this.#page.isClosed()) {
      this.#handedTo = this.#operation;
      return this.#page;
    }
    if (this.closed) throw new HostError('page_changed', 'the browser was closed');
    try {
      const why = this.#ended ?? 'the page was closed';
      const spare = this.#spare;
      this.#spare = undefined;
      const page = spare !== undefined && !spare.isClosed() ? spare : await this.#openOwnPage(deadline);
      await this.#adopt(page);
      this.revisions.invalidate(`${why}; a fresh page was opened`);
      this.#handedTo = this.#operation;
      return page;
    } catch (error) {
      if (error instanceof HostError) throw error;
      throw new HostError('page_changed', `could not reopen the page: ${firstLineOf(error)}`);
    }
  }

  /**
   * Runs one operation on the page (navigate, act, observe, leaving for `about:blank`) in its
   * turn, after every earlier one (see {@link SerialLock}). When the driven page goes away while
   * it runs, {@link page} refuses to open another for it, and a failure other than
   * `outcome_unknown` (the input may have reached the page) or `lease_lost` is answered
   * `page_changed`: whatever the operation could not do, the page it was for is gone.
   *
   * After any failure the page is checked (a trivial evaluation, at most 5,000 ms), without
   * holding up the answer or the page's turn: a page that does not answer (a script that never
   * ends, started by a click, say) is ended and replaced, so it never wedges the profile; the next
   * {@link page} waits for that verdict.
   * @throws HostError('deadline_exceeded') when its turn does not come before `deadline`;
   *   whatever `operation` throws, as above.
   */
  run<T>(deadline: Deadline, operation: () => Promise<T>): Promise<T> {
    return this.lock.run(deadline, async () => {
      const token = {};
      this.#operation = token;
      try {
        return await operation();
      } catch (error) {
        this.#checkAnswering();
        if (this.#lostIn !== token || !(error instanceof HostError) || KEPT_WHEN_PAGE_LOST.has(error.code)) throw error;
        throw new HostError('page_changed', `the page went away during this operation (${this.#ended ?? 'it was closed'}): ${error.message}`);
      } finally {
        this.#operation = undefined;
      }
    });
  }

  /**
   * Runs `navigation`, one the host itself performs on the driven page (the agent's
   * `page.navigate`, leaving for `about:blank` when a lease ends, showing a sign-in page): a
   * `beforeunload` dialog raised meanwhile is accepted (see {@link PageDialogs}).
   */
  hostNavigation<T>(navigation: () => Promise<T>): Promise<T> {
    return this.#dialogs.hostNavigation(navigation);
  }

  /** The page operations drive, if it is open; never opens one (see {@link page}). */
  get openPage(): Page | undefined {
    return this.#page && !this.#page.isClosed() ? this.#page : undefined;
  }

  /**
   * A new page in this profile's context for a temporary load (a verification's protected load,
   * ADR-0164), apart from the page operations drive; dialogs on it are dismissed, unrecorded, and
   * downloads cancelled (see `PageDownloads.refuseOn`). The caller closes it.
   * @throws HostError('page_changed') when the browser is gone or the page cannot be opened in time.
   */
  async temporaryPage(deadline: Deadline): Promise<Page> {
    if (this.closed) throw new HostError('page_changed', 'the browser was closed');
    try {
      const page = await this.#openOwnPage(deadline);
      page.on('dialog', (dialog) => void dialog.dismiss().catch(() => {}));
      this.downloads.refuseOn(page);
      const unguard = await this.confinement.guardPage(page, { temporary: true });
      page.once('close', unguard);
      return page;
    } catch (error) {
      if (error instanceof HostError && error.code !== 'deadline_exceeded') throw error;
      throw new HostError('page_changed', `could not open a temporary page: ${firstLineOf(error)}`);
    }
  }

  /**
   * Ends the driven page's activity when a lease ends (README "Confinement": no page outlives its
   * lease): the page leaves for `about:blank` (a `beforeunload` dialog accepted), so its scripts,
   * timers and workers stop and the next run starts on a page of nobody's; earlier references are
   * invalidated. Not under the page's lock (the browser is not busy for admission); the next
   * lease waits for it ({@link settled}). A check of the page after a failed operation (see
   * {@link run}) finishes first, and a page it ends is replaced rather than navigated. Bounded by
   * that check (at most 5,000 ms, and the replacement's opening and the old page's closing) and
   * 5,000 ms more; never throws (a page that does not go is not navigable anyway: nothing is,
   * between leases).
   */
  endActivity(): Promise<void> {
    this.#lifecycle = this.#lifecycle.then(async () => {
      // A page being checked after a failed operation is judged on the document that failed, not
      // on the about:blank it would leave for (a hung renderer's page answered from there, was
      // kept, and the next lease's page on the same site joined the hung renderer).
      await this.#probing;
      const page = this.openPage;
      if (page === undefined || this.closed || page.url() === 'about:blank') return;
      this.revisions.invalidate('the last lease ended');
      try {
        await this.hostNavigation(() => page.goto('about:blank', { timeout: LIFECYCLE_TIMEOUT_MS }));
      } catch {
        // best effort, see above
      }
    });
    return this.#lifecycle;
  }

  /** Resolves once the activity of the last lease has ended (see {@link endActivity}). Never throws. */
  settled(): Promise<void> {
    return this.#lifecycle;
  }

  /** The context's storage state (every cookie, local storage by origin) for a snapshot; callers hold the lock. */
  storageState(): ReturnType<BrowserContext['storageState']> {
    return this.#context.storageState();
  }
  /** Adds a restored snapshot's cookies (session cookies survive a move only so). @throws Playwright's error */
  addCookies(cookies: Parameters<BrowserContext['addCookies']>[0]): Promise<void> {
    return this.#context.addCookies(cookies);
  }

  /** Closes the browser (idempotent); waits for Chromium to exit; its downloads are deleted. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#detachPage();
      await this.#context.close().catch(() => {});
      await Promise.all([this.#proxy.close(), this.downloads.close()]);
    })();
    return this.#closing;
  }

  async #adopt(page: Page): Promise<void> {
    this.#detachPage();
    this.#page = page;
    this.#ended = undefined;
    const [unguard, detachDownloads] = await Promise.all([this.confinement.guardPage(page), this.downloads.attach(page)]);
    const detachTraffic = this.traffic.attach(page);
    const detachDialogs = this.#dialogs.attach(page, () => void this.#endPage(page, 'the page raised a dialog loop and was closed'));
    const onClose = (): void => void this.#wentAway(page, 'the page was closed');
    const onCrash = (): void => void this.#endPage(page, 'the page crashed and was closed');
    page.once('close', onClose);
    page.once('crash', onCrash);
    this.#detachPage = () => {
      unguard();
      detachDownloads();
      detachTraffic();
      detachDialogs();
      page.off('close', onClose);
      page.off('crash', onCrash);
    };
  }

  /** Starts checking that the driven page still answers (see {@link run}), unless a check runs already. */
  #checkAnswering(): void {
    const page = this.openPage;
    if (page === undefined || this.#probing !== undefined) return;
    this.#probing = (async () => {
      if (!(await pageAnswers(page, HUNG_PAGE_MS))) await this.#endPage(page, 'the page stopped answering and was closed');
    })()
      .catch(() => {})
      .finally(() => {
        this.#probing = undefined;
      });
  }

  /** Notes that the driven page `page` went away, and under which operation; false if it is not the driven page. */
  #wentAway(page: Page, why: string): boolean {
    if (this.#page !== page) return false;
    this.#page = undefined;
    this.#ended = why;
    this.revisions.invalidate(why);
    if (this.#operation !== undefined && this.#handedTo === this.#operation) this.#lostIn = this.#operation;
    return true;
  }

  /**
   * Ends the driven page `page` because it cannot go on (a dialog loop, a crash, no answer): from
   * now on it is not the driven page (the next {@link page} opens a fresh one and invalidates references), and it is closed
   * without its `beforeunload` handlers (see {@link closePage}). It is unguarded only once it is
   * closed, so a page that would not close stays confined. Never throws.
   */
  async #endPage(page: Page, why: string): Promise<void> {
    if (!this.#wentAway(page, why)) return;
    const detach = this.#detachPage;
    this.#detachPage = () => {};
    // Headed Chromium quits with its last tab: the replacement opens before the old page closes.
    if (this.#spare === undefined || this.#spare.isClosed()) {
      const opening = Deadline.after(SPARE_PAGE_MS);
      try {
        this.#spare = await this.#openOwnPage(opening);
      } catch {
        this.#spare = undefined;
      } finally {
        opening.dispose();
      }
    }
    if (await closePage(page)) detach();
  }
}

/** Failures an operation keeps when its page went away under it (see {@link ProfileBrowser.run}). */
const KEPT_WHEN_PAGE_LOST: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['outcome_unknown', 'lease_lost', 'page_changed']);
