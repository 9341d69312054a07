import { createSocket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { isPublicAddress, resolveChecked } from '../../browser-host/egress/address-policy.ts';
import { startBrowserHost } from '../../browser-host/host.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import type { Observation } from '../../shared/observation.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { hostTest, TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';
import { type RequestCounter, requestCounterFixture, startRequestCounter } from '../support/request-counter.ts';

const test = hostTest().extend('other', { scope: 'file' }, requestCounterFixture);

function navigate(client: HostClient, leaseId: string, url: string): Promise<Observation> {
  return client.call('page.navigate', { lease_id: leaseId, url, timeout_ms: 15_000 });
}

function observe(client: HostClient, leaseId: string): Promise<Observation> {
  return client.call('page.observe', { lease_id: leaseId, timeout_ms: 15_000 });
}

/** Waits a moment for whatever the page started, then observes. */
async function afterAMoment(client: HostClient, leaseId: string): Promise<Observation> {
  await new Promise((resolve) => setTimeout(resolve, 700));
  return observe(client, leaseId);
}

describe('addresses a page may reach on the strength of being public', () => {
  test('loopback, private, link-local, metadata, unspecified and mapped forms are not public', () => {
    for (const address of [
      '127.0.0.1',
      '0x7f.1',
      '2130706433',
      '10.0.0.1',
      '192.168.1.1',
      '172.16.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '[::ffff:a9fe:a9fe]',
      'fd00::1',
      'fe80::1',
      '64:ff9b::a00:1',
      '2002:a00:1::',
      '255.255.255.255',
      '224.0.0.1',
      'not an address',
    ]) {
      expect(isPublicAddress(address), address).toBe(false);
    }
    for (const address of ['8.8.8.8', '93.184.216.34', '2606:4700::1111']) expect(isPublicAddress(address), address).toBe(true);
  });

  test('a host name is refused when it resolves to a forbidden address, with no connection made', async () => {
    expect(await resolveChecked('localhost', false)).toBe('forbidden_address');
    expect(await resolveChecked('169.254.169.254', false)).toBe('forbidden_address');
    expect(await resolveChecked('[::ffff:10.0.0.1]', false)).toBe('forbidden_address');
    expect(await resolveChecked('127.0.0.1', true)).toEqual({ address: '127.0.0.1', family: 4, public: false });
  });
});

describe('egress confinement: nothing a page does reaches another origin', () => {
  for (const mode of ['meta-refresh', 'script-navigation', 'form-post', 'subresources', 'frame', 'popup', 'popup-noopener', 'top-navigation-from-frame']) {
    test(`${mode} to another origin is blocked before any byte leaves, and reported`, async ({ client, lease, fixtures, other }) => {
      const page = await navigate(client, lease.lease_id, fixtures.url(`confinement/hostile.html?mode=${mode}&to=${encodeURIComponent(other.origin)}`));
      const later = await afterAMoment(client, lease.lease_id);
      expect(other.connections()).toBe(0);
      expect(other.requests()).toEqual([]);
      expect(later.url).toBe(page.url);
      const blocked = [...(page.blocked ?? []), ...(later.blocked ?? [])];
      expect(blocked.length).toBeGreaterThan(0);
      expect(blocked.filter((entry) => entry.origin !== other.origin)).toEqual([]);
      // Never a path or a query string.
      expect(JSON.stringify(blocked)).not.toContain('/popup');
    });
  }

  test('a server-side redirect to another origin fails the navigation and sends nothing there', async ({ client, lease, fixtures, other }) => {
    const response = await client.request('page.navigate', {
      lease_id: lease.lease_id,
      url: fixtures.url(`redirect?to=${encodeURIComponent(`${other.origin}/landed`)}`),
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'navigation_failed' } });
    expect(other.connections()).toBe(0);
    const next = await navigate(client, lease.lease_id, fixtures.url('button.html'));
    expect(next.blocked).toEqual([expect.objectContaining({ origin: other.origin, kind: 'navigation', reason: 'outside_run_origins' })]);
  });

  test('a redirect within the run origin is followed', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url(`redirect?to=${encodeURIComponent('/button.html')}`));
    expect(page.url).toBe(fixtures.url('button.html'));
    expect(page.blocked).toBeUndefined();
  });

  test("the host's own WebSocket port is never reachable from a page", async ({ client, lease, fixtures, host }) => {
    const page = await navigate(
      client,
      lease.lease_id,
      fixtures.url(`confinement/hostile.html?mode=subresources&to=${encodeURIComponent(`http://127.0.0.1:${host.port}`)}`),
    );
    const later = await afterAMoment(client, lease.lease_id);
    const blocked = [...(page.blocked ?? []), ...(later.blocked ?? [])];
    expect(blocked).toContainEqual(expect.objectContaining({ origin: `http://127.0.0.1:${host.port}`, kind: 'subresource', reason: 'forbidden_address' }));
  });

  test('metadata and private addresses are refused before any connection', async ({ client, lease, fixtures }) => {
    for (const to of ['http://169.254.169.254', 'http://10.0.0.1', 'http://[::ffff:a9fe:a9fe]']) {
      const page = await navigate(client, lease.lease_id, fixtures.url(`confinement/hostile.html?mode=subresources&to=${encodeURIComponent(to)}`));
      const later = await afterAMoment(client, lease.lease_id);
      const blocked = [...(page.blocked ?? []), ...(later.blocked ?? [])];
      expect(blocked.length, to).toBeGreaterThan(0);
      expect(blocked.every((entry) => entry.reason === 'forbidden_address')).toBe(true);
    }
  });

  test("a popup opened by a click is refused and reported, and the lease's page stays where it was", async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url(`confinement/hostile.html?mode=popup&on=click&to=${encodeURIComponent(fixtures.origin)}`));
    const after = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Go') },
      timeout_ms: 15_000,
    });
    expect(after.url).toBe(page.url);
    const later = await afterAMoment(client, lease.lease_id);
    expect([...(after.blocked ?? []), ...(later.blocked ?? [])]).toContainEqual(expect.objectContaining({ kind: 'popup', reason: 'popup_refused' }));
  });

  test('between leases nothing is navigable: a new lease with other origins cannot reach the old ones', async ({ client, fixtures, other }) => {
    const lease = await client.call('lease.acquire', { run_id: 'run-elsewhere', profile_id: 'elsewhere', origins: [other.origin], ttl_ms: 60_000 });
    try {
      const response = await client.request('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('button.html'), timeout_ms: 15_000 });
      expect(response).toMatchObject({ error: { code: 'navigation_failed' } });
    } finally {
      await client.call('lease.release', { lease_id: lease.lease_id });
    }
  });
});

describe('frames', () => {
  test('a frame of another origin is withheld and named with its origin; a frame of the page itself is shown', async ({ client, lease, fixtures, other }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url(`confinement/frames.html?foreign=${encodeURIComponent(other.origin)}`));
    const later = await afterAMoment(client, lease.lease_id);
    expect(other.connections()).toBe(0);
    expect(later.snapshot).toContain('Inside own frame');
    expect(later.snapshot).not.toContain('Inside foreign frame');
    expect(later.frames).toEqual([
      expect.objectContaining({ origin: fixtures.origin, withheld: false, prefix: expect.stringMatching(/^f\d+$/) }),
      expect.objectContaining({ origin: other.origin, withheld: true }),
    ]);
    expect(page.frames?.length).toBe(2);
  });
});

describe('confinement against sandboxed frames that redirect, ref-like text and WebRTC', () => {
  test('a frame in its own renderer (sandboxed) that navigates itself through a redirect is stopped as a frame', async ({ client, lease, fixtures, other }) => {
    const frame = fixtures.url(`confinement/later-redirect.html?to=${encodeURIComponent(`${other.origin}/sandboxed-doc`)}`);
    const page = await navigate(client, lease.lease_id, fixtures.url(`confinement/sandboxed.html?frame=${encodeURIComponent(frame)}`));
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const later = await observe(client, lease.lease_id);
    expect(other.connections()).toBe(0);
    expect([...(page.blocked ?? []), ...(later.blocked ?? [])]).toContainEqual(
      expect.objectContaining({ origin: other.origin, kind: 'frame', reason: 'outside_run_origins' }),
    );
  });

  test('text that carries "[ref=eN]" does not make another element the target', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('confinement/decoy.html'));
    const danger = refOf(page.snapshot, 'button', 'Delete account');
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: danger },
      target: { role: 'button', name: 'Save draft', frame_origin: fixtures.origin },
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'target_changed' } });
    expect(fixtures.hits('delete')).toBe(0);
  });

  test('WebRTC sends no datagram around the proxy', async ({ client, lease, fixtures }) => {
    const socket = createSocket('udp4');
    let datagrams = 0;
    socket.on('message', () => {
      datagrams += 1;
    });
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    try {
      await navigate(client, lease.lease_id, fixtures.url(`confinement/webrtc.html?udp=${socket.address().port}`));
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(datagrams).toBe(0);
    } finally {
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    }
  });
});

describe('the operator names allowed and denied origins per host', () => {
  let denied: RequestCounter;
  let allowed: RequestCounter;
  beforeAll(async () => {
    denied = await startRequestCounter();
    allowed = await startRequestCounter();
  });
  afterAll(async () => {
    await denied.close();
    await allowed.close();
  });
  test('origins the operator denies are never reached, those allowed are reached on loopback, the host port never', async ({ fixtures }) => {
    const profiles = await temporaryDirectory('egress-operator-');
    const host = await startBrowserHost(testHostConfig(profiles.dir, { egress: { allow: [allowed.origin], deny: [denied.origin] } }));
    const client = await connectHost(host.url, TEST_SECRET);
    try {
      const hostOrigin = `http://127.0.0.1:${host.port}`;
      const lease = await client.call('lease.acquire', {
        run_id: 'operator',
        profile_id: 'operator',
        origins: [fixtures.origin, denied.origin, hostOrigin],
        ttl_ms: 60_000,
      });
      expect(await client.request('page.navigate', { lease_id: lease.lease_id, url: `${denied.origin}/top`, timeout_ms: 15_000 })).toMatchObject({
        error: { code: 'navigation_failed' },
      });
      for (const target of [denied.origin, allowed.origin, hostOrigin]) {
        await navigate(client, lease.lease_id, fixtures.url(`confinement/hostile.html?mode=subresources&to=${encodeURIComponent(target)}`));
      }
      await new Promise((resolve) => setTimeout(resolve, 700));
      const later = await observe(client, lease.lease_id);
      expect(denied.connections()).toBe(0);
      expect(allowed.connections()).toBeGreaterThan(0);
      expect(JSON.stringify(later)).not.toContain('Upgrade Required');
      await client.call('lease.release', { lease_id: lease.lease_id });
    } finally {
      await client.close();
      await host.close();
      await profiles.remove();
    }
  });
});
