import { describe, expect, vi } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { HostStatus } from '../../shared/protocol.ts';
import type { HostClient } from '../support/host-client.ts';
import { acquire, hostTest } from '../support/host-fixture.ts';

const test = hostTest({ maxBrowsers: 3 });

// Tests reuse the profiles p1..p5 so the open browsers carry over and few launches are needed.

/** Resolves once host.status matches `expected`, polling over the wire (generous 20 s window). */
async function statusBecomes(client: HostClient, expected: Partial<HostStatus>): Promise<void> {
  await vi.waitFor(async () => expect(await client.call('host.status', {})).toMatchObject(expected), { timeout: 20_000, interval: 20 });
}

async function releaseAll(client: HostClient, leaseIds: string[]): Promise<void> {
  for (const lease_id of leaseIds) await client.call('lease.release', { lease_id });
}

describe('admission and leases', () => {
  test('a fourth profile waits for a slot and then fails admission_full', async ({ client }) => {
    const leases = await Promise.all(['p1', 'p2', 'p3'].map((profile) => acquire(client, profile)));
    expect(new Set(leases.map((l) => l.profile_id))).toEqual(new Set(['p1', 'p2', 'p3']));
    expect(await client.call('host.status', {})).toMatchObject({ browsers: 3, leases: 3 });

    const fourth = client.request('lease.acquire', { run_id: 'r4', profile_id: 'p4', origins: ['http://127.0.0.1:9'], ttl_ms: 60_000, wait_ms: 1_000 });
    await statusBecomes(client, { waiting: 1 });
    expect(await fourth).toMatchObject({ error: { code: 'admission_full' } });
    expect(await client.call('host.status', {})).toMatchObject({ browsers: 3, leases: 3, waiting: 0 });
    await releaseAll(
      client,
      leases.map((l) => l.lease_id),
    );
  });

  test("a wait longer than the host's HOST_ADMISSION_WAIT_MS (5 s here) is cut to it", { timeout: 20_000 }, async ({ client }) => {
    const leases = await Promise.all(['p1', 'p2', 'p3'].map((profile) => acquire(client, profile)));
    const fourth = client.request('lease.acquire', { run_id: 'r4', profile_id: 'p4', origins: ['http://127.0.0.1:9'], ttl_ms: 60_000, wait_ms: 60_000 });
    expect(await fourth).toMatchObject({ error: { code: 'admission_full', message: expect.stringContaining('5000 ms') } });
    await releaseAll(
      client,
      leases.map((l) => l.lease_id),
    );
  });

  test('a waiting fourth profile is admitted when one of the three is released', async ({ client }) => {
    const leases = await Promise.all(['p1', 'p2', 'p3'].map((profile) => acquire(client, profile)));
    const fourth = acquire(client, 'p4', 60_000, 30_000);
    await statusBecomes(client, { waiting: 1 });
    expect(await client.call('lease.release', { lease_id: leases[1]!.lease_id })).toEqual({ released: true });
    const granted = await fourth;
    expect(granted).toMatchObject({ profile_id: 'p4', generation: 1 });
    expect(await client.call('host.status', {})).toMatchObject({ browsers: 3, leases: 3, waiting: 0 });
    await releaseAll(client, [leases[0]!.lease_id, leases[2]!.lease_id, granted.lease_id]);
  });

  test('the same profile cannot be leased twice at once: profile_in_use names the run and its lease expiry; its next lease has the next generation', async ({
    client,
  }) => {
    const first = await acquire(client, 'p1');
    const second = await client.request('lease.acquire', { run_id: 'other', profile_id: 'p1', origins: ['http://127.0.0.1:9'], ttl_ms: 60_000, wait_ms: 300 });
    expect(second).toMatchObject({ error: { code: 'profile_in_use' } });
    const message = (second as { error: { message: string } }).error.message;
    expect(message).toContain('run-p1');
    expect(message).toContain(new Date(first.expires_at_ms).toISOString());

    const waiting = client.call('lease.acquire', { run_id: 'other', profile_id: 'p1', origins: ['http://127.0.0.1:9'], ttl_ms: 60_000, wait_ms: 30_000 });
    await statusBecomes(client, { waiting: 1 });
    await client.call('lease.release', { lease_id: first.lease_id });
    const next = await waiting;
    expect(next.generation).toBe(first.generation + 1);
    expect(next.lease_id).not.toBe(first.lease_id);
    await client.call('lease.release', { lease_id: next.lease_id });
  });

  test('an expired lease is lease_lost and dispatches nothing', async ({ client, fixtures }) => {
    const lease = await acquire(client, 'p1', 60_000);
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('button.html'), timeout_ms: 15_000 });
    const ref = refOf(page.snapshot, 'button', 'Record click');
    // Shorten the lease to the minimum TTL and wait for the host to expire it.
    const short = await client.call('lease.renew', { lease_id: lease.lease_id, ttl_ms: 1_000 });
    expect(short.expires_at_ms).toBeLessThan(lease.expires_at_ms);
    await statusBecomes(client, { leases: 0 });

    const before = fixtures.hits('click');
    const act = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: ref },
      timeout_ms: 5_000,
    });
    expect(act).toMatchObject({ error: { code: 'lease_lost' } });
    expect(fixtures.hits('click')).toBe(before);
    expect(await client.request('lease.renew', { lease_id: lease.lease_id, ttl_ms: 60_000 })).toMatchObject({ error: { code: 'lease_lost' } });
    expect(await client.call('lease.release', { lease_id: lease.lease_id })).toEqual({ released: false });
  });

  test('a released lease is lease_lost; its browser stays open and is reused by the next lease', async ({ client, fixtures }) => {
    const lease = await acquire(client, 'p1');
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('quiet.html'), timeout_ms: 15_000 });
    await client.call('lease.release', { lease_id: lease.lease_id });
    expect(await client.request('page.observe', { lease_id: lease.lease_id, timeout_ms: 5_000 })).toMatchObject({ error: { code: 'lease_lost' } });

    const next = await acquire(client, 'p1');
    // Same browser; the last run's page is gone (about:blank): the new lease acts only after observing.
    const stale = await client.request('page.act', {
      lease_id: next.lease_id,
      action: { action: 'click', revision: page.revision, reference: 'p1' },
      timeout_ms: 5_000,
    });
    expect(stale).toMatchObject({ error: { code: 'page_changed' } });
    const observed = await client.call('page.observe', { lease_id: next.lease_id, timeout_ms: 15_000 });
    expect(observed.url).toBe('about:blank');
    expect(observed.revision).toBe(page.revision + 1);
    await client.call('lease.release', { lease_id: next.lease_id });
  });

  test('an idle browser is closed to admit another profile when all slots are open', async ({ client }) => {
    expect(await client.call('host.status', {})).toMatchObject({ browsers: 3, leases: 0 });
    const lease = await acquire(client, 'p5', 60_000, 0);
    expect(lease.profile_id).toBe('p5');
    expect(await client.call('host.status', {})).toMatchObject({ browsers: 3, leases: 1 });
    await client.call('lease.release', { lease_id: lease.lease_id });
  });

  test('a run that lost the answer to its acquisition gets a fresh lease at once; its orphan is ended', async ({ client }) => {
    const orphan = await client.call('lease.acquire', {
      run_id: 'run-lost',
      profile_id: 'p2',
      origins: ['http://127.0.0.1:9'],
      ttl_ms: 60_000,
      wait_ms: 30_000,
    });
    // The edge never saw that grant and asks again for the same run: no wait for the orphan's TTL.
    const fresh = await client.call('lease.acquire', { run_id: 'run-lost', profile_id: 'p2', origins: ['http://127.0.0.1:9'], ttl_ms: 60_000, wait_ms: 300 });
    expect(fresh.generation).toBe(orphan.generation + 1);
    expect(await client.request('lease.renew', { lease_id: orphan.lease_id, ttl_ms: 60_000 })).toMatchObject({ error: { code: 'lease_lost' } });
    // Another run still cannot share the profile.
    expect(
      await client.request('lease.acquire', { run_id: 'someone-else', profile_id: 'p2', origins: ['http://127.0.0.1:9'], ttl_ms: 60_000, wait_ms: 300 }),
    ).toMatchObject({
      error: { code: 'profile_in_use' },
    });
    await client.call('lease.release', { lease_id: fresh.lease_id });
  });
});
