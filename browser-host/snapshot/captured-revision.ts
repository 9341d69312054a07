import type { FrameSummary, IncompleteReason, SettleReport } from '../../shared/observation.ts';
import type { ElementCensus } from './element-census.ts';

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
  /** The page's iframes, in snapshot order; foreign ones withheld from `lines` (../frame-confinement.ts). */
  readonly frames: readonly FrameSummary[];
  /** Why `lines` may hold less than a person sees (marks.ts); empty when nothing is known missing. */
  readonly incomplete: readonly IncompleteReason[];
  readonly settle: SettleReport;
  /** What the capture counted right before its snapshot, when it could (element-census.ts): later reads it proves empty are skipped. */
  readonly census?: ElementCensus;
}

/**
 * The revisions of one profile's driven page: the latest full capture, its number and whether its
 * references may still be used. Revisions are monotonic and continue from `firstRevision`, so a
 * relaunched browser never reuses a number an agent may still hold (ADR-0159).
 */
export class RevisionLedger {
  #current: number;
  #latest: CapturedRevision | undefined;
  #invalidation: string | undefined;

  /** Starts at `firstRevision` (0 for a profile never launched before); nothing is captured yet. */
  constructor(firstRevision: number) {
    this.#current = firstRevision;
  }

  /** The latest full capture's revision (`firstRevision` before the first). */
  get current(): number {
    return this.#current;
  }

  /** The latest full capture, the only one continuations may read. */
  get latest(): CapturedRevision | undefined {
    return this.#latest;
  }

  /** Records a successful full capture as the next revision; clears any invalidation. */
  record(capture: Omit<CapturedRevision, 'revision'>): CapturedRevision {
    this.#current += 1;
    this.#latest = { ...capture, revision: this.#current };
    this.#invalidation = undefined;
    return this.#latest;
  }

  /**
   * Marks the references of the latest revision untrustworthy (ADR-0159: a capture failed or was
   * cancelled, the page was replaced, or a new lease began): acts and continuation reads fail
   * `page_changed` until a fresh full capture succeeds.
   */
  invalidate(reason: string): void {
    this.#invalidation = reason;
  }

  /** Why the latest references cannot be used, if they cannot. */
  get invalidation(): string | undefined {
    return this.#invalidation;
  }
}
