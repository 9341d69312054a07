import type { Clock } from './ports.ts';

/** Longest the edge waits for a browser host to open a connection and say hello, in ms. */
export const HOST_CONNECT_MS = 10_000;
/**
 * Longest a host command with no budget of its own may take, in ms: a ceremony's status or end, a
 * live view's opening or one of its calls.
 */
export const HOST_CALL_MS = 10_000;
/**
 * How much longer than the `timeout_ms` it gave the host the edge waits for the answer, in ms:
 * the time the answer spends on the wire, so the host's own typed timeout arrives first.
 */
export const HOST_ANSWER_MARGIN_MS = 1_000;

/**
 * A point on the edge's clock by which an operation must finish: the edge's counterpart of the
 * host's `Deadline` (browser-host/deadline.ts, the pattern of Playwright's server-side
 * `progress`). An operation that makes several host round trips (connect, lease, command,
 * postcondition reads) takes one and gives each step what is left of it, so budgets nest (DESIGN.md
 * section 4: settle and predicate budgets inside the tool deadline, inside the run deadline)
 * instead of each step adding its own loose constant.
 *
 * It reads the `Clock` port, so tests move it with their clock. It owns no timer: the waits that
 * end at it are the host session's own per-command timeouts, given {@link Deadline.upTo}.
 *
 * @example
 * const deadline = Deadline.at(ports.clock, Math.min(call.deadlineAt, run.deadlineAt));
 * const session = await ports.host.connect(deadline.upTo(HOST_CONNECT_MS));
 */
export class Deadline {
  private constructor(
    private readonly clock: Clock,
    /** When it passes, in epoch ms of the clock. */
    readonly endsAt: number,
  ) {}

  /** The deadline at `endsAt` (epoch ms of `clock`); already passed when that is not in the future. */
  static at(clock: Clock, endsAt: number): Deadline {
    return new Deadline(clock, endsAt);
  }

  /** The deadline `ms` milliseconds from now on `clock` (0 or less: already passed). */
  static after(clock: Clock, ms: number): Deadline {
    return new Deadline(clock, clock.now() + ms);
  }

  /** Milliseconds left, never negative. */
  remaining(): number {
    return Math.max(0, this.endsAt - this.clock.now());
  }

  /** Whether it has passed (or passes `marginMs` from now). */
  passed(marginMs = 0): boolean {
    return this.clock.now() + marginMs >= this.endsAt;
  }

  /** What one step may take, in ms: what is left, but at most `capMs`. */
  upTo(capMs: number): number {
    return Math.min(this.remaining(), capMs);
  }
}
