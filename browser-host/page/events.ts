import type { BlockedRequest, PageDialog } from '../../shared/observation.ts';

/** Most blocked requests kept between two observations; older ones are counted, not kept. */
const MAX_BLOCKED = 64;
/** Most dialogs kept between two observations. */
const MAX_DIALOGS = 32;

/** What a page did since the last observation that reported it. */
export interface PageEventReport {
  readonly blocked: BlockedRequest[];
  readonly dialogs: PageDialog[];
}

/**
 * The record of what the page tried that the host stopped or answered (README "Confinement"):
 * requests the egress confinement blocked and dialogs the host answered, kept (bounded: the
 * newest 64 and 32) until the next full observation reports them (shared/observation.ts
 * `blocked`, `dialogs`). One per profile browser; a new lease starts with an empty record.
 */
export class PageEvents {
  #blocked: BlockedRequest[] = [];
  #dialogs: PageDialog[] = [];

  /** Records one blocked request; the same origin and kind within one report is kept once. */
  blocked(entry: Omit<BlockedRequest, 'at'>): void {
    if (this.#blocked.some((seen) => seen.origin === entry.origin && seen.kind === entry.kind && seen.reason === entry.reason)) return;
    this.#blocked.push({ ...entry, at: new Date().toISOString() });
    if (this.#blocked.length > MAX_BLOCKED) this.#blocked.shift();
  }

  /** Records one dialog and how it was answered. */
  dialog(entry: Omit<PageDialog, 'at'>): void {
    this.#dialogs.push({ ...entry, at: new Date().toISOString() });
    if (this.#dialogs.length > MAX_DIALOGS) this.#dialogs.shift();
  }

  /** Everything recorded since the last drain, oldest first; the record starts empty again. */
  drain(): PageEventReport {
    const report = { blocked: this.#blocked, dialogs: this.#dialogs };
    this.#blocked = [];
    this.#dialogs = [];
    return report;
  }
}
