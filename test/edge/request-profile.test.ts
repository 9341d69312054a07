import { describe, expect, it } from 'vitest';
import { RequestProfile } from '../../edge/metrics/request-profile.ts';

// Where a request's time went (`Server-Timing` when D1_STATEMENT_COUNTER=1): the host's phases
// arrive inside its wire call and are printed as nested spans, which the rest (`app`) does not
// lose time to twice.

function spans(header: string): Record<string, number> {
  return Object.fromEntries(header.split(', ').map((part) => [part.split(';')[0], Number(/dur=([\d.]+)/.exec(part)?.[1])]));
}

describe('the request profile', () => {
  it('prints nested spans beside the spans they lie in, and takes only the outer spans from app', () => {
    const profile = new RequestProfile();
    profile.add('d1', 5, 2);
    profile.add('host.page.observe', 100);
    profile.addNested('phase.snapshot', 80);
    profile.addNested('phase.snapshot', 4);
    profile.addNested('phase.sign_in', 6);
    const timing = profile.serverTiming();
    const read = spans(timing);
    expect(read).toMatchObject({ d1: 5, 'host.page.observe': 100, 'phase.snapshot': 84, 'phase.sign_in': 6 });
    expect(timing).toContain('d1;dur=5.0;desc="2"');
    // app is the request's time outside d1 and the wire call; the phases inside the call count nothing more.
    expect(read.app).toBeCloseTo(Math.max(0, (read.total as number) - 105), 0);
    expect(timing.indexOf('phase.snapshot')).toBeLessThan(timing.indexOf('app;'));
  });
});
