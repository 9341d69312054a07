import { describe, expect, vi } from 'vitest';
import { accountPage, acquirePlaced, fleetTest, signIn } from '../support/fleet-fixture.ts';
import type { WireCallError } from '../support/host-client.ts';

const INTERVAL_MS = 1_500;
const test = fleetTest({ snapshotIntervalMs: INTERVAL_MS });

describe('snapshots during a hold, and fencing by generation', () => {
  test('a long lease is snapshotted every HOST_SNAPSHOT_INTERVAL_MS (1.5 s here) while it lasts, once more when it ends, then no more', async ({
    site,
    sink,
    hostA,
  }) => {
    const grant = await sink.place('long');
    const lease = await acquirePlaced(hostA.client, 'long', grant, site);
    await signIn(hostA.client, lease.lease_id, site, 'ada');
    await vi.waitFor(() => expect(sink.stored('long').length).toBeGreaterThanOrEqual(2), { timeout: 15_000, interval: 50 });
    expect(await hostA.client.call('host.status', {})).toMatchObject({ leases: 1 });

    await hostA.client.call('lease.release', { lease_id: lease.lease_id });
    await vi.waitFor(async () => expect(await hostA.client.call('host.status', {})).toMatchObject({ snapshots_pending: 0 }), { timeout: 15_000 });
    const afterRelease = sink.stored('long').length;
    await new Promise((resolve) => setTimeout(resolve, 2 * INTERVAL_MS + 500));
    expect(sink.stored('long')).toHaveLength(afterRelease);
    expect(sink.stored('long').every((snapshot) => snapshot.generation === 1 && snapshot.hostId === 'host-a')).toBe(true);
  });

  test('a host whose placement moved on is refused at its next snapshot: it closes its browser of the profile, its lease is lost, and a later placement there restores the newest snapshot', async ({
    site,
    sink,
    hostA,
    hostB,
  }) => {
    const first = await sink.place('fenced');
    const lease = await acquirePlaced(hostA.client, 'fenced', first, site, 120_000);
    await signIn(hostA.client, lease.lease_id, site, 'ada');
    await vi.waitFor(() => expect(sink.stored('fenced').length).toBeGreaterThanOrEqual(1), { timeout: 15_000, interval: 50 });
    const browsersBefore = (await hostA.client.call('host.status', {})).browsers;

    // The edge declared host A unreachable and placed the profile on host B, where bob signs in.
    const second = await sink.place('fenced');
    const moved = await acquirePlaced(hostB.client, 'fenced', second, site);
    expect(moved.restore).toEqual({ restored_version: second.restore[0]!.version, refused: [] });
    await signIn(hostB.client, moved.lease_id, site, 'bob');
    await hostB.client.call('lease.release', { lease_id: moved.lease_id });

    // Host A's next snapshot is refused: it closes its browser of the profile, interrupting its lease.
    await vi.waitFor(async () => expect(await hostA.client.call('host.status', {})).toMatchObject({ browsers: browsersBefore - 1, leases: 0 }), {
      timeout: 15_000,
    });
    expect(sink.refusals('fenced')).toBeGreaterThanOrEqual(1);
    const lost = await hostA.client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 5_000 }).catch((error: WireCallError) => error.detail);
    expect(lost).toMatchObject({ code: 'lease_lost' });
    await vi.waitFor(() => expect(sink.stored('fenced').at(-1)).toMatchObject({ generation: 2, hostId: 'host-b' }), { timeout: 15_000 });
    // Nothing host A wrote after the move was kept.
    expect(sink.stored('fenced').filter((snapshot) => snapshot.hostId === 'host-a' && snapshot.generation !== 1)).toEqual([]);

    // Placed back on host A at a newer generation, the profile is restored from bob's snapshot.
    const third = await sink.place('fenced');
    const back = await acquirePlaced(hostA.client, 'fenced', third, site);
    expect(back.restore).toEqual({ restored_version: third.restore[0]!.version, refused: [] });
    expect(third.restore[0]!.version).toBe(sink.stored('fenced').findLast((snapshot) => snapshot.hostId === 'host-b')!.version);
    expect(await accountPage(hostA.client, back.lease_id, site)).toContain('Session: bob');
    await hostA.client.call('lease.release', { lease_id: back.lease_id });
  });

  test('an acquire with a placement older than the one recorded is refused stale_generation', async ({ site, sink, hostA }) => {
    const older = await sink.place('ordered');
    const newer = await sink.place('ordered');
    const lease = await acquirePlaced(hostA.client, 'ordered', newer, site);
    await hostA.client.call('lease.release', { lease_id: lease.lease_id });
    const refused = await acquirePlaced(hostA.client, 'ordered', older, site).catch((error: WireCallError) => error.detail);
    expect(refused).toEqual({ code: 'stale_generation', message: 'profile ordered is placed here at generation 2, not 1' });
  });
});
