import { describe, expect, vi } from 'vitest';
import type { HostStatus } from '../../shared/protocol.ts';
import { begin, ceremonyId, ceremonyTest, claimsOf, personSignsIn, signedIn, stateBecomes } from '../support/ceremony-fixture.ts';
import type { HostClient } from '../support/host-client.ts';
import { acquire } from '../support/host-fixture.ts';

// Three browsers at most; a short admission wait so a starved verification gives up quickly.
const test = ceremonyTest('fixture', { maxBrowsers: 3, admissionWaitMs: 1_500 });

/** Samples host.status every 25 ms until stopped (at most 2,400 samples); resolves with them all. */
function sampleStatus(client: HostClient): { stop: () => Promise<HostStatus[]> } {
  const samples: HostStatus[] = [];
  let running = true;
  const loop = (async () => {
    while (running && samples.length < 2_400) {
      samples.push(await client.call('host.status', {}));
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return samples;
    },
  };
}

describe('verification loads and admission', () => {
  test('a verification reserves two loads: verification_loads is 2 while it runs and 0 after', async ({ world, client }) => {
    await signedIn(client, world, 'loads', 'alice');
    expect((await client.call('host.status', {})).verification_loads).toBe(0);
    const sampler = sampleStatus(client);
    // The protected page answers after 1.5 s, so the verification is seen in flight.
    const answer = await begin(client, world, 'loads', { id: ceremonyId(), generation: 2, protectedPath: '/reports?delay_ms=1500' });
    const samples = await sampler.stop();
    expect(answer.state).toBe('verified');
    expect(samples.some((status) => status.verification_loads === 2)).toBe(true);
    expect(samples.every((status) => status.verification_loads === 0 || status.verification_loads === 2)).toBe(true);
    expect(samples.every((status) => status.browsers + status.verification_loads <= 3)).toBe(true);
    expect(await client.call('host.status', {})).toMatchObject({ verification_loads: 0, ceremonies_open: 0 });
  });

  test('with two other profiles held, a verification waits for room instead of exceeding three browsers', async ({ world, client }) => {
    const others = [await acquire(client, 'busy-1'), await acquire(client, 'busy-2')];
    const sampler = sampleStatus(client);
    const before = world.site.counters();
    const id = ceremonyId();
    // The ceremony's profile is the third browser: no room for the two loads of its session check.
    const started = await begin(client, world, 'starved', { id, timeoutMs: 60_000 });
    expect(started.state).toBe('awaiting_person');
    // The session check never got to load anything.
    expect(world.site.counters()).toMatchObject({ protected_denied: before.protected_denied, protected_loads: before.protected_loads });

    await personSignsIn(world, 'starved', 'alice');
    // The surface left the sign-in page, but the verification cannot get its loads yet.
    await vi.waitFor(async () => expect((await client.call('host.status', {})).waiting).toBe(1), { timeout: 10_000, interval: 25 });
    expect((await client.call('ceremony.status', { ceremony_id: id })).state).not.toBe('verified');

    // Released, the two idle browsers are closed to make room, and the verification goes through.
    for (const lease of others) await client.call('lease.release', { lease_id: lease.lease_id });
    const verified = await stateBecomes(client, id, 'verified', 30_000);
    expect(await claimsOf(verified)).toMatchObject({ outcome: 'verified', profile_id: 'starved' });
    const samples = await sampler.stop();
    expect(samples.some((status) => status.waiting >= 1 && status.verification_loads === 0)).toBe(true);
    expect(samples.some((status) => status.verification_loads === 2)).toBe(true);
    expect(samples.every((status) => status.browsers + status.verification_loads <= 3)).toBe(true);
    expect(await client.call('host.status', {})).toMatchObject({ browsers: 1, verification_loads: 0, waiting: 0 });
  });
});
