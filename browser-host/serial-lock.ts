import type { Deadline } from './deadline.ts';
import { timePhase } from './phase-clock.ts';

/**
 * Runs operations on one page one at a time, in arrival order. A caller whose deadline passes
 * while it waits gives up its turn without running, so nothing is dispatched late.
 */
export class SerialLock {
  #tail: Promise<void> = Promise.resolve();
  #held = 0;

  /** Operations running or waiting. */
  get held(): number {
    return this.#held;
  }

  /**
   * Runs `operation` after every earlier one has finished.
   * @throws HostError('deadline_exceeded') when the deadline passes before its turn; the
   *   operation is then never run.
   */
  async run<T>(deadline: Deadline, operation: () => Promise<T>): Promise<T> {
    const previous = this.#tail;
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.#tail = previous.then(() => mine);
    this.#held += 1;
    try {
      await timePhase('queue', () => deadline.race(previous, 'deadline_exceeded', 'ran out of time waiting for an earlier operation on this page'));
      return await operation();
    } finally {
      this.#held -= 1;
      release();
    }
  }
}
