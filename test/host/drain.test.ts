import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, vi } from 'vitest';
import { accountPage, acquirePlaced, fleetTest, signIn } from '../support/fleet-fixture.ts';
import type { HostClient, WireCallError } from '../support/host-client.ts';
import { TEST_SECRET } from '../support/host-fixture.ts';

const test = fleetTest();

const DRAINING_MESSAGE = (hostId: string) => `host ${hostId} is draining: it takes no new leases or sign-in ceremonies`;

/** Resolves once `host.drain` answers drained. */
async function drainedBecomes(client: HostClient): Promise<void> {
  await vi.waitFor(async () => expect(await client.call('host.drain', {})).toMatchObject({ drained: true }), { timeout: 20_000, interval: 100 });
}

describe('draining a host', () => {
  test('a draining host refuses new leases and ceremonies with host_draining, lets a live lease finish, writes its snapshot, closes its browsers and reports drained', async ({
    site,
    sink,
    hostA,
  }) => {
    // An idle browser, snapshotted when its lease ended, and a live lease.
    const idleGrant = await sink.place('idle');
    const idle = await acquirePlaced(hostA.client, 'idle', idleGrant, site);
    await hostA.client.call('lease.release', { lease_id: idle.lease_id });
    const grant = await sink.place('busy');
    const lease = await acquirePlaced(hostA.client, 'busy', grant, site);
    await signIn(hostA.client, lease.lease_id, site, 'ada');
    await vi.waitFor(() => expect(sink.stored('idle')).toHaveLength(1), { timeout: 15_000 });

    expect(await hostA.client.call('host.drain', {})).toMatchObject({ draining: true, drained: false, leases: 1 });
    expect(await hostA.client.call('host.status', {})).toMatchObject({ draining: true, version: 'test', leases: 1 });
    const refusedLease = await acquirePlaced(hostA.client, 'newcomer', await sink.place('newcomer'), site).catch((error: WireCallError) => error.detail);
    expect(refusedLease).toEqual({ code: 'host_draining', message: DRAINING_MESSAGE('host-a') });
    const refusedCeremony = await hostA.client
      .call('ceremony.begin', {
        ceremony_id: 'cer_drainingtest1',
        profile_id: 'newcomer',
        origin: site.origin,
        generation: 1,
        sign_in_url: site.url('sign-in'),
        protected_url: site.url('account'),
        timeout_ms: 10_000,
      })
      .catch((error: WireCallError) => error.detail);
    expect(refusedCeremony).toEqual({ code: 'host_draining', message: DRAINING_MESSAGE('host-a') });
    // The idle browser closes (after a last snapshot); the live lease goes on.
    await vi.waitFor(async () => expect(await hostA.client.call('host.status', {})).toMatchObject({ browsers: 1, snapshots_pending: 0 }), { timeout: 15_000 });
    expect(await accountPage(hostA.client, lease.lease_id, site)).toContain('Session: ada');
    expect(await hostA.client.call('host.drain', {})).toMatchObject({ drained: false, leases: 1 });

    await hostA.client.call('lease.release', { lease_id: lease.lease_id });
    await drainedBecomes(hostA.client);
    expect(await hostA.client.call('host.status', {})).toMatchObject({ browsers: 0, leases: 0, snapshots_pending: 0, draining: true });
    expect(sink.stored('busy')).toHaveLength(1);
    expect(sink.stored('busy')[0]).toMatchObject({ generation: 1, hostId: 'host-a' });
  });

  test('the preStop command (npm run host:drain) drains the local host over the wire and exits 0 only once it is drained', async ({ site, sink, hostB }) => {
    const lease = await acquirePlaced(hostB.client, 'held', await sink.place('held'), site);
    // As the preStop hook runs it: Node's own type stripping, no tsx.
    const command = spawn(process.execPath, ['browser-host/drain/drain-command.ts'], {
      env: { PATH: process.env.PATH ?? '', HOST_SHARED_SECRET: TEST_SECRET, HOST_PORT: String(hostB.host.port), HOST_DRAIN_TIMEOUT_MS: '60000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    command.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = once(command, 'exit').then(([code]) => code as number | null);
    try {
      await vi.waitFor(() => expect(stdout).toContain('is draining: 1 leases live'), { timeout: 20_000 });
      expect(await hostB.client.call('host.status', {})).toMatchObject({ draining: true, leases: 1 });
      expect(command.exitCode).toBeNull();

      await hostB.client.call('lease.release', { lease_id: lease.lease_id });
      expect(await exited).toBe(0);
      expect(stdout).toMatch(/is drained\n$/);
      expect(await hostB.client.call('host.status', {})).toMatchObject({ browsers: 0, snapshots_pending: 0 });
      expect(sink.stored('held')).toHaveLength(1);
    } finally {
      if (command.exitCode === null) command.kill('SIGKILL');
    }
  });
});
