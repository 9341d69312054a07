import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { Observation } from '../../shared/observation.ts';
import { HostPhase, type HostPhaseTimings } from '../../shared/protocol.ts';
import { hostTest } from '../support/host-fixture.ts';

// Where a host operation's time went travels with its answer when the host is asked to
// (`HOST_PHASE_TIMINGS=1`; issue 35): each phase it passed through, in ms, under the names
// `npm run bench` prints; methods that touch no page carry none. Off by default, so an edge
// whose frame schema has no `timings` keeps reading a newer host's answers.

const test = hostTest({ phaseTimings: true });
const quiet = hostTest();

function timingsOf(frame: unknown): HostPhaseTimings {
  const timings = (frame as { timings?: HostPhaseTimings }).timings;
  expect(timings).toBeDefined();
  for (const [phase, ms] of Object.entries(timings ?? {})) {
    expect(HostPhase.options).toContain(phase);
    expect(ms).toBeGreaterThanOrEqual(0);
  }
  return timings ?? {};
}

describe('phase timings on the wire', () => {
  test('an observe answers with the time of its reach read and its snapshot; an act with its target check, prechecks, input and settling', async ({
    client,
    lease,
    fixtures,
  }) => {
    const navigated = await client.request('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('button.html'), timeout_ms: 20_000 });
    expect(timingsOf(navigated)).toMatchObject({ settle: expect.any(Number), snapshot: expect.any(Number) });

    const observed = await client.request('page.observe', { lease_id: lease.lease_id, timeout_ms: 20_000 });
    const observeTimings = timingsOf(observed);
    expect(Object.keys(observeTimings)).toEqual(expect.arrayContaining(['queue', 'reach', 'snapshot', 'frames', 'marks', 'sign_in']));
    expect(observeTimings.snapshot).toBeGreaterThan(0);
    // A plain observe neither acts nor settles.
    expect(observeTimings).not.toHaveProperty('settle');
    expect(observeTimings).not.toHaveProperty('input');

    const page = (observed as { result: Observation }).result;
    const button = refOf(page.snapshot, 'button', 'Record click');
    const acted = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: button },
      target: { role: 'button', name: 'Record click', frame_origin: fixtures.origin },
      timeout_ms: 20_000,
    });
    expect(acted).toHaveProperty('result');
    const actTimings = timingsOf(acted);
    expect(Object.keys(actTimings)).toEqual(expect.arrayContaining(['target_check', 'actionability', 'input', 'settle', 'snapshot']));
    // Settling waits for its quiet window (ADR-0159), and the answer says how long.
    expect(actTimings.settle).toBeGreaterThan(0);
  });

  test('a lease renewal touches no page and carries no timings', async ({ client, lease }) => {
    const renewed = await client.request('lease.renew', { lease_id: lease.lease_id, ttl_ms: 60_000 });
    expect(renewed).toHaveProperty('result');
    expect(renewed).not.toHaveProperty('timings');
  });

  quiet('a host not asked for timings answers without them', async ({ client, lease, fixtures }) => {
    const navigated = await client.request('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('button.html'), timeout_ms: 20_000 });
    expect(navigated).toHaveProperty('result');
    expect(navigated).not.toHaveProperty('timings');
  });
});
