import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import type { HostPhase, HostPhaseTimings } from '../shared/protocol.ts';

/**
 * Where one wire operation's time goes (issue 35): each {@link HostPhase} it passed through, in
 * ms, summed over the phase's occurrences. The clock of the operation running is found through
 * the async context, so a phase is timed where it happens without passing the clock along; code
 * outside any operation (a screenshot shelved after the answer) times nothing. Measuring changes
 * nothing about what the operation does.
 */
export class PhaseClock {
  readonly #spans = new Map<HostPhase, number>();

  /** Adds `ms` to `phase`. */
  add(phase: HostPhase, ms: number): void {
    this.#spans.set(phase, (this.#spans.get(phase) ?? 0) + ms);
  }

  /** The phases timed so far, ms rounded to 0.1. */
  timings(): HostPhaseTimings {
    const timings: HostPhaseTimings = {};
    for (const [phase, ms] of this.#spans) timings[phase] = Math.round(ms * 10) / 10;
    return timings;
  }
}

const running = new AsyncLocalStorage<PhaseClock>();

/** Runs `operation` with a fresh {@link PhaseClock}; answers its result (or throws its error) and the clock. */
export async function withPhaseClock<T>(operation: () => Promise<T>): Promise<{ result: T; clock: PhaseClock }> {
  const clock = new PhaseClock();
  return { result: await running.run(clock, operation), clock };
}

/** Runs `work`, adding its duration (success or failure) to `phase` of the operation running, if any. */
export async function timePhase<T>(phase: HostPhase, work: () => Promise<T>): Promise<T> {
  const clock = running.getStore();
  if (clock === undefined) return work();
  const started = performance.now();
  try {
    return await work();
  } finally {
    clock.add(phase, performance.now() - started);
  }
}

/** Adds `ms` to `phase` of the operation running, if any (a phase measured elsewhere, e.g. settling). */
export function notePhase(phase: HostPhase, ms: number): void {
  running.getStore()?.add(phase, ms);
}
