import { describe, expect, it } from 'vitest';
import { Deadline } from '../../../edge/deadline.ts';
import type { Clock } from '../../../edge/ports.ts';

/** A clock that moves only when told to. */
function movableClock(start = 1_000_000): Clock & { advance(ms: number): void } {
  let now = start;
  return {
    now: () => now,
    sleep: async (ms) => {
      now += ms;
    },
    advance: (ms) => {
      now += ms;
    },
  };
}

describe('the edge deadline', () => {
  it('counts down on its clock and never goes below zero', () => {
    const clock = movableClock();
    const deadline = Deadline.after(clock, 5_000);
    expect(deadline.remaining()).toBe(5_000);
    clock.advance(1_200);
    expect(deadline.remaining()).toBe(3_800);
    expect(deadline.passed()).toBe(false);
    clock.advance(10_000);
    expect(deadline.remaining()).toBe(0);
    expect(deadline.passed()).toBe(true);
  });

  it('gives a step what is left, but at most its cap', () => {
    const clock = movableClock();
    const deadline = Deadline.at(clock, clock.now() + 30_000);
    expect(deadline.upTo(10_000)).toBe(10_000);
    clock.advance(25_000);
    expect(deadline.upTo(10_000)).toBe(5_000);
  });

  it('counts as passed a margin before its end', () => {
    const clock = movableClock();
    const deadline = Deadline.after(clock, 1_000);
    expect(deadline.passed(199)).toBe(false);
    clock.advance(800);
    expect(deadline.passed(200)).toBe(true);
  });

  it('a deadline already in the past has passed and leaves nothing', () => {
    const clock = movableClock();
    const deadline = Deadline.at(clock, clock.now() - 1);
    expect(deadline.passed()).toBe(true);
    expect(deadline.upTo(10_000)).toBe(0);
  });
});
