import { performance } from 'node:perf_hooks';
import type { ErrorCode } from '../shared/errors.ts';
import { HostError } from './host-error.ts';

/** Node's timer limit, in ms; longer delays would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A point in (monotonic) time by which an operation must finish, with the abort signal that fires
 * then. Every host operation takes one as its first argument and races its awaits against it, so a
 * timeout lives in exactly one place instead of in scattered `setTimeout`s (the pattern of
 * Playwright's server-side `progress`).
 *
 * A deadline owns one timer; {@link Deadline.dispose} releases it early. A child deadline never
 * outlives its parent and aborts when the parent does.
 *
 * @example
 * const deadline = Deadline.after(5_000);
 * try { await deadline.race(page.goto(url, { signal: deadline.signal })); } finally { deadline.dispose(); }
 */
export class Deadline {
  readonly #controller = new AbortController();
  readonly #startedAt: number;
  readonly #endsAt: number;
  readonly #timer: NodeJS.Timeout;
  readonly #detach: () => void;

  private constructor(ms: number, parent?: Deadline) {
    this.#startedAt = performance.now();
    this.#endsAt = Math.min(this.#startedAt + Math.max(0, ms), parent ? parent.#endsAt : Infinity);
    const delay = Math.min(this.#endsAt - this.#startedAt, MAX_TIMER_MS);
    this.#timer = setTimeout(() => this.#controller.abort(new HostError('deadline_exceeded')), delay);
    this.#timer.unref();
    if (parent) {
      const onParentAbort = (): void => this.#controller.abort(parent.signal.reason);
      if (parent.signal.aborted) onParentAbort();
      else parent.signal.addEventListener('abort', onParentAbort, { once: true });
      this.#detach = () => parent.signal.removeEventListener('abort', onParentAbort);
    } else {
      this.#detach = () => {};
    }
  }

  /** A deadline `ms` milliseconds from now (0 or less: already expired). */
  static after(ms: number): Deadline {
    return new Deadline(ms);
  }

  /**
   * Waits for `work` at most `ms`, whatever any operation's own deadline: a grace period for a
   * cleanup step, a join or a close. Resolves `work`'s value when it resolves in time, undefined
   * when it rejects or `ms` pass first (it is left to finish on its own). Never throws. The one
   * bounded wait of the host.
   */
  static async waitAtMost<T>(ms: number, work: Promise<T>): Promise<T | undefined> {
    const grace = new Deadline(ms);
    try {
      return await grace.race(work);
    } catch {
      return undefined;
    } finally {
      grace.dispose();
    }
  }

  /**
   * Waits `ms` (a backoff between attempts to reach the edge) unless `stop` fires first.
   * @returns true after the full wait; false when `stop` fired first (or had already). Never throws.
   */
  static async pause(ms: number, stop: AbortSignal): Promise<boolean> {
    if (stop.aborted) return false;
    if (ms <= 0) return true;
    const wait = new Deadline(ms);
    try {
      const either = AbortSignal.any([wait.signal, stop]);
      await new Promise<void>((resolve) => {
        if (either.aborted) resolve();
        else either.addEventListener('abort', () => resolve(), { once: true });
      });
    } finally {
      wait.dispose();
    }
    return !stop.aborted;
  }

  /** A deadline `ms` from now or this one's end, whichever comes first; aborts with this one. */
  child(ms: number): Deadline {
    return new Deadline(ms, this);
  }

  /** Fires when the deadline passes (or a parent deadline does, or {@link dispose} ran first). */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /**
   * A child deadline that ends `reserveMs` before this one, keeping that much time for the
   * steps that must still run afterwards (settling, capture). Never longer than this one.
   */
  leaving(reserveMs: number): Deadline {
    return new Deadline(this.remainingMs() - Math.max(0, reserveMs), this);
  }

  /** Whole milliseconds left, never negative. */
  remainingMs(): number {
    if (this.#controller.signal.aborted) return 0;
    return Math.max(0, Math.floor(this.#endsAt - performance.now()));
  }

  /** Whole milliseconds since this deadline was made. */
  elapsedMs(): number {
    return Math.max(0, Math.round(performance.now() - this.#startedAt));
  }

  get expired(): boolean {
    return this.remainingMs() === 0;
  }

  /** @throws HostError(code) when the deadline has passed; default `deadline_exceeded`. */
  throwIfExpired(code: ErrorCode = 'deadline_exceeded', message?: string): void {
    if (this.expired) throw new HostError(code, message ?? 'the operation ran out of time');
  }

  /**
   * `promise`'s outcome, or a rejection with `HostError(code)` as soon as the deadline passes. The
   * losing promise keeps running; callers that must not leave work behind (a capture, ADR-0159)
   * abort it through {@link signal} and join it themselves.
   * @throws HostError(code) on expiry; default `deadline_exceeded`.
   */
  race<T>(promise: Promise<T>, code: ErrorCode = 'deadline_exceeded', message?: string): Promise<T> {
    promise.catch(() => {});
    const signal = this.#controller.signal;
    const expired = (): HostError => new HostError(code, message ?? 'the operation ran out of time');
    if (signal.aborted) return Promise.reject(expired());
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => reject(expired());
      signal.addEventListener('abort', onAbort, { once: true });
      promise.then(
        (value) => {
          signal.removeEventListener('abort', onAbort);
          resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
  }

  /** Stops the timer and detaches from the parent; the signal fires now if it had not yet. */
  dispose(): void {
    clearTimeout(this.#timer);
    this.#detach();
    if (!this.#controller.signal.aborted) this.#controller.abort(new HostError('deadline_exceeded', 'deadline disposed'));
  }
}
