import type { BrowserContext, Page } from 'playwright-core';
import type { Deadline } from '../deadline.ts';

/**
 * The pages of one browser context that the host opened itself; every other page that appears
 * is a popup and is closed once Playwright has set it up (its documents never load: see
 * `Confinement.refusePopups`). A page that appears while the host opens one of its own waits
 * until every opening has resolved, then is closed unless an opening claimed it.
 */
export class OwnPages {
  readonly #context: BrowserContext;
  readonly #pages = new WeakSet<Page>();
  #opening = 0;
  /** Pages that appeared while the host was opening one of its own: popups unless an opening claims them. */
  readonly #unclaimed = new Set<Page>();

  /** Counts the context's pages open now (its first) as the host's own and closes every later popup. */
  constructor(context: BrowserContext) {
    this.#context = context;
    for (const page of context.pages()) this.#pages.add(page);
    context.on('page', (page) => this.#onNewPage(page));
  }

  #onNewPage(page: Page): void {
    if (this.#pages.has(page)) return;
    if (this.#opening > 0) {
      this.#unclaimed.add(page);
      return;
    }
    // (A window that never asks for a document, an about:blank one the page scripts, is closed
    // without a report: there is no origin to name.)
    void page.close().catch(() => {});
  }

  /**
   * Opens a page of the host's own within `deadline`. A page that opens only after the deadline
   * has passed is closed, never left behind.
   * @throws HostError('deadline_exceeded') when the deadline passes first; Playwright's error when
   *   the context has closed.
   */
  async open(deadline: Deadline): Promise<Page> {
    this.#opening += 1;
    // Claimed before anything else hears of it resolving (the sweep below runs after this).
    const opening = this.#context.newPage().then((page) => {
      this.#pages.add(page);
      return page;
    });
    void opening
      .catch(() => undefined)
      .finally(() => {
        this.#opening -= 1;
        if (this.#opening > 0) return;
        for (const page of this.#unclaimed) if (!this.#pages.has(page)) void page.close().catch(() => {});
        this.#unclaimed.clear();
      });
    try {
      return await deadline.race(opening);
    } catch (error) {
      void opening.then((late) => late.close()).catch(() => {});
      throw error;
    }
  }
}
