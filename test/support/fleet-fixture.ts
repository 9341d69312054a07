import { test } from 'vitest';
import type { HostConfig } from '../../browser-host/config.ts';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import type { PlacementGrant } from '../../shared/fleet.ts';
import type { LeaseGrant } from '../../shared/protocol.ts';
import { connectHost, type HostClient } from './host-client.ts';
import { TEST_SECRET, temporaryDirectory, testHostConfig } from './host-fixture.ts';
import { type SessionSite, startSessionSite } from './session-site.ts';
import { type SnapshotSink, startSnapshotSink } from './snapshot-sink.ts';

/** One host of a test fleet: the host, its own profiles directory, and a verified wire client. */
export interface FleetHost {
  readonly host: BrowserHost;
  readonly profilesDir: string;
  readonly client: HostClient;
}

async function startFleetHost(hostId: string, sink: SnapshotSink, overrides: Partial<HostConfig>, onCleanup: (cleanup: () => Promise<void>) => void) {
  const profiles = await temporaryDirectory(`${hostId}-profiles-`);
  const host = await startBrowserHost(testHostConfig(profiles.dir, { hostId, edgeUrl: sink.url, ...overrides }));
  const client = await connectHost(host.url, TEST_SECRET);
  onCleanup(async () => {
    await client.close();
    await host.close();
    await profiles.remove();
  });
  return { host, profilesDir: profiles.dir, client };
}

/**
 * The fleet-test API (issue 32): `test` with, per file, the session site (`site`), the edge's
 * snapshot endpoints (`sink`) and two hosts that snapshot to it, `hostA` and `hostB`, each with
 * its own profiles directory (two machines), started with `overrides`.
 */
export function fleetTest(overrides: Partial<HostConfig> = {}) {
  return test
    .extend('site', { scope: 'file' }, async ({}, { onCleanup }): Promise<SessionSite> => {
      const site = await startSessionSite();
      onCleanup(() => site.close());
      return site;
    })
    .extend('sink', { scope: 'file' }, async ({}, { onCleanup }): Promise<SnapshotSink> => {
      const sink = await startSnapshotSink(TEST_SECRET);
      onCleanup(() => sink.close());
      return sink;
    })
    .extend('hostA', { scope: 'file' }, ({ sink }, { onCleanup }): Promise<FleetHost> => startFleetHost('host-a', sink, overrides, onCleanup))
    .extend('hostB', { scope: 'file' }, ({ sink }, { onCleanup }): Promise<FleetHost> => startFleetHost('host-b', sink, overrides, onCleanup));
}

/** Leases `profileId` on a host for `placement`, its run allowed `site`'s origin (TTL one minute unless said). */
export function acquirePlaced(client: HostClient, profileId: string, placement: PlacementGrant, site: SessionSite, ttlMs = 60_000): Promise<LeaseGrant> {
  return client.call('lease.acquire', { run_id: `run-${profileId}`, profile_id: profileId, origins: [site.origin], ttl_ms: ttlMs, placement });
}

/** Signs `user` in on the session site in the leased page. */
export async function signIn(client: HostClient, leaseId: string, site: SessionSite, user: string): Promise<void> {
  await client.call('page.navigate', { lease_id: leaseId, url: site.url(`sign-in?user=${user}`), timeout_ms: 15_000 });
}

/** What the session site's account page says in the leased page ("Session: ...", "Remembered: ...", "Draft: ..."). */
export async function accountPage(client: HostClient, leaseId: string, site: SessionSite): Promise<string> {
  return (await client.call('page.navigate', { lease_id: leaseId, url: site.url('account'), timeout_ms: 15_000 })).snapshot;
}
