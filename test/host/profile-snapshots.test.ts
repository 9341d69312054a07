import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { entries } from 'tar';
import { describe, expect, vi } from 'vitest';
import { leftOutOfSnapshot, STORAGE_STATE_ENTRY } from '../../browser-host/profile-snapshot/archive.ts';
import { openSnapshot } from '../../browser-host/profile-snapshot/seal.ts';
import { accountPage, acquirePlaced, fleetTest, signIn } from '../support/fleet-fixture.ts';
import type { HostClient } from '../support/host-client.ts';
import type { SnapshotSink } from '../support/snapshot-sink.ts';

const test = fleetTest();

/** Resolves once the sink holds `count` snapshots of the profile and the host has none pending. */
async function storedBecomes(sink: SnapshotSink, client: HostClient, profileId: string, count: number): Promise<void> {
  await vi.waitFor(
    async () => {
      expect(sink.stored(profileId)).toHaveLength(count);
      expect(await client.call('host.status', {})).toMatchObject({ snapshots_pending: 0 });
    },
    { timeout: 20_000, interval: 50 },
  );
}

/** Every path under `dir`, relative, with `/` separators. */
async function pathsUnder(dir: string): Promise<string[]> {
  const found = await readdir(dir, { recursive: true });
  return found.map((entry) => entry.split(path.sep).join('/'));
}

describe('profiles that move between hosts', () => {
  test('a profile signed in on one host is snapshotted when its lease is released and restored signed in on another host: session cookie, persistent cookie, local storage', async ({
    site,
    sink,
    hostA,
    hostB,
  }) => {
    const first = await sink.place('mover');
    const leaseA = await acquirePlaced(hostA.client, 'mover', first, site);
    expect(leaseA.restore).toEqual({ restored_version: null, refused: [] });
    await signIn(hostA.client, leaseA.lease_id, site, 'ada');
    expect(await accountPage(hostA.client, leaseA.lease_id, site)).toContain('Session: ada');

    // The release answers at once; the snapshot is written behind it.
    expect(await hostA.client.call('lease.release', { lease_id: leaseA.lease_id })).toEqual({ released: true });
    await storedBecomes(sink, hostA.client, 'mover', 1);
    expect(sink.stored('mover')[0]).toMatchObject({ version: 1, generation: 1, hostId: 'host-a' });

    const second = await sink.place('mover');
    expect(second.restore.map((ref) => ref.version)).toEqual([1]);
    const leaseB = await acquirePlaced(hostB.client, 'mover', second, site);
    expect(leaseB.restore).toEqual({ restored_version: 1, refused: [] });
    const account = await accountPage(hostB.client, leaseB.lease_id, site);
    expect(account).toContain('Session: ada');
    expect(account).toContain('Remembered: ada');
    expect(account).toContain('Draft: Draft of ada');
    // Local storage was put back from a page the host answered itself: nothing reached the site.
    expect(site.hits('/')).toBe(0);
    await hostB.client.call('lease.release', { lease_id: leaseB.lease_id });
  });

  test("the archive leaves caches, crash dumps and Chromium's Singleton locks out, and the sealed bytes never hold a cookie's value in clear", async ({
    site,
    sink,
    hostA,
  }) => {
    const grant = await sink.place('inspected');
    const lease = await acquirePlaced(hostA.client, 'inspected', grant, site);
    await signIn(hostA.client, lease.lease_id, site, 'bea');
    // What the archive must leave out is there on disk while Chromium runs.
    const onDisk = await pathsUnder(path.join(hostA.profilesDir, 'inspected'));
    expect(onDisk.filter((entry) => entry.split('/').some(leftOutOfSnapshot))).toEqual(expect.arrayContaining(['SingletonLock', 'Default/Cache']));
    await hostA.client.call('lease.release', { lease_id: lease.lease_id });
    await storedBecomes(sink, hostA.client, 'inspected', 1);

    const sealed = sink.stored('inspected')[0]!.bytes;
    const archived: string[] = [];
    let storageState = '';
    for await (const entry of entries(openSnapshot(sealed, grant.snapshot_key, 'inspected'))) {
      archived.push(entry.path);
      if (entry.path === STORAGE_STATE_ENTRY) storageState = await entry.text();
    }
    expect(archived).toEqual(expect.arrayContaining(['user-data/', 'user-data/Default/', 'user-data/Local State', STORAGE_STATE_ENTRY]));
    expect(archived.filter((entry) => entry.split('/').some(leftOutOfSnapshot))).toEqual([]);

    const cookies = site.issued().find((issued) => issued.user === 'bea')!;
    // The archive holds the values (the storage state), the sealed bytes do not.
    expect(storageState).toContain(cookies.session);
    expect(storageState).toContain(cookies.remember);
    expect(Buffer.from(sealed).includes(cookies.session)).toBe(false);
    expect(Buffer.from(sealed).includes(cookies.remember)).toBe(false);
  });

  test('a corrupted and a truncated newest snapshot are refused with their reasons and the profile starts from the older good one, nothing of them left on disk', async ({
    site,
    sink,
    hostA,
    hostB,
  }) => {
    const grant = await sink.place('layers');
    for (const [index, user] of ['ada', 'bob', 'cyd'].entries()) {
      const lease = await acquirePlaced(hostA.client, 'layers', grant, site);
      await signIn(hostA.client, lease.lease_id, site, user);
      await hostA.client.call('lease.release', { lease_id: lease.lease_id });
      await storedBecomes(sink, hostA.client, 'layers', index + 1);
    }
    const [, bob, cyd] = sink.stored('layers');
    const corrupted = new Uint8Array(cyd!.bytes);
    corrupted[Math.floor(corrupted.byteLength / 2)]! ^= 0xff;
    sink.serveInstead('layers', 3, corrupted);
    sink.serveInstead('layers', 2, bob!.bytes.subarray(0, Math.floor(bob!.bytes.byteLength / 2)));

    const moved = await sink.place('layers');
    expect(moved.restore.map((ref) => ref.version)).toEqual([3, 2, 1]);
    const lease = await acquirePlaced(hostB.client, 'layers', moved, site);
    expect(lease.restore).toEqual({
      restored_version: 1,
      refused: [
        {
          version: 3,
          reason: expect.stringMatching(/^digest mismatch: the bytes' SHA-256 is [0-9a-f]{12}…, the grant's [0-9a-f]{12}… \(altered in storage\)$/),
        },
        { version: 2, reason: `truncated: the edge served ${Math.floor(bob!.bytes.byteLength / 2)} of the grant's ${bob!.bytes.byteLength} bytes` },
      ],
    });
    expect(await accountPage(hostB.client, lease.lease_id, site)).toContain('Session: ada');
    // Nothing staged or replaced stays beside the profiles.
    expect((await readdir(hostB.profilesDir)).filter((name) => name.startsWith('.'))).toEqual([]);
    await hostB.client.call('lease.release', { lease_id: lease.lease_id });
  });
});
