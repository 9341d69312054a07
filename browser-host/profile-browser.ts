import type { BrowserContext, Page } from 'playwright-core';
import type { SettleReport } from '../shared/observation.ts';
import type { Deadline } from './deadline.ts';
import { firstLineOf, HostError } from './host-error.ts';
import { PageTraffic } from './page-traffic.ts';
import { type LaunchOptions, launchProfileContext } from './profiles.ts';
import { SerialLock } from './serial-lock.ts';

/**
 * One full capture of the page: the revision it was given, the document's URL and title, the
 * AI-mode aria snapshot split into lines (one line is one node) and the report of the settling
 * that preceded it (`not_waited` for a plain observe).
 */
export interface CapturedRevision {
  readonly revision: number;
  readonly url: string;
  readonly title: string;
  readonly lines: readonly string[];
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
  readonly #context: BrowserContext;
  #page: Page | undefined;
  #detachPage: () => void = () => {};
  #revision: number;
  #latest: CapturedRevision | undefined;
  #invalidation: string | undefined;
  #closing: Promise<void> | undefined;
  #capturesRunning = 0;

  private constructor(profileId: string, context: BrowserContext, firstRevision: number) {
    this.profileId = profileId;
    this.#context = context;
    this.#revision = firstRevision;
  }

  /**
   * Launches Chromium for `profileId` (see {@link launchProfileContext}) and adopts its first page.
   * @throws HostError('host_unavailable') when Chromium does not start before the deadline.
   */
  static async launch(deadline: Deadline, profileId: string, options: LaunchOptions, firstRevision = 0): Promise<ProfileBrowser> {
    const context = await launchProfileContext(deadline, profileId, options);
    const browser = new ProfileBrowser(profileId, context, firstRevision);
    const first = context.pages()[0];
    if (first) browser.#adopt(first);
    return browser;
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
      const page = await deadline.race(this.#context.newPage());
      this.#adopt(page);
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
    const opening = this.#context.newPage();
    try {
      const page = await deadline.race(opening);
      page.on('dialog', (dialog) => void dialog.dismiss().catch(() => {}));
      return page;
    } catch (error) {
      // A page that opens after the race was lost is closed, never left behind.
      void opening.then((late) => late.close()).catch(() => {});
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

  /** Records a successful full capture as the next revision; clears any invalidation. */
  recordCapture(capture: Omit<CapturedRevision, 'revision'>): CapturedRevision {
    this.#revision += 1;
    this.#latest = { ...capture, revision: this.#revision };
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

  /** Closes the browser (idempotent); waits for Chromium to exit. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#detachPage();
      await this.#context.close().catch(() => {});
    })();
    return this.#closing;
  }

  #adopt(page: Page): void {
    this.#detachPage();
    this.#page = page;
    const detachTraffic = this.traffic.attach(page);
    // A dialog would block every later evaluation and capture; the host answers none of them.
    const onDialog = (dialog: { dismiss(): Promise<void> }): void => {
      dialog.dismiss().catch(() => {});
    };
    page.on('dialog', onDialog);
    this.#detachPage = () => {
      detachTraffic();
      page.off('dialog', onDialog);
    };
  }
}
