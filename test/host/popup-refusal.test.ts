import { describe, expect } from 'vitest';
import { startBrowserHost } from '../../browser-host/host.ts';
import type { Observation } from '../../shared/observation.ts';
import { startFixtureServer } from '../support/fixture-server.ts';
import type { HostClient } from '../support/host-client.ts';
import { connectHost } from '../support/host-client.ts';
import { acquire, hostTest, TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';
import { requestCounterFixture, startRequestCounter } from '../support/request-counter.ts';

// Headed, as in production: a headed popup gets a window of its own, and that is where closing a
// popup too early left its opener's renderer stuck (every capture of the page then timed out).
const test = hostTest({ headless: false, display: undefined }).extend('other', { scope: 'file' }, requestCounterFixture);

function navigate(client: HostClient, leaseId: string, url: string): Promise<Observation> {
  return client.call('page.navigate', { lease_id: leaseId, url, timeout_ms: 15_000 });
}

describe('popups, headed', () => {
  test('a page that opens ten popups at once keeps answering: each navigation and capture succeeds, nothing is sent, every popup is refused', async ({
    client,
    lease,
    fixtures,
    other,
  }) => {
    for (let round = 0; round < 5; round++) {
      const page = await navigate(client, lease.lease_id, fixtures.url(`confinement/hostile.html?mode=popup-burst&to=${encodeURIComponent(other.origin)}`));
      await new Promise((resolve) => setTimeout(resolve, 700));
      const later = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
      expect(later.url).toBe(page.url);
      // Reports keep one entry per origin, kind and reason.
      expect([...(page.blocked ?? []), ...(later.blocked ?? [])], `round ${round}`).toContainEqual(
        expect.objectContaining({ kind: 'popup', origin: other.origin, reason: 'popup_refused' }),
      );
    }
    expect(other.connections()).toBe(0);
  });

  test("a popup to one of the run's own origins never loads its document either", async ({ client, fixtures, other }) => {
    // `other` is a run origin here: the egress proxy would let a connection to it through.
    const lease = await acquire(client, 'own-origin-popups', 60_000, undefined, [fixtures.origin, other.origin]);
    try {
      const before = other.connections();
      const page = await navigate(client, lease.lease_id, fixtures.url(`confinement/hostile.html?mode=popup&to=${encodeURIComponent(other.origin)}`));
      await new Promise((resolve) => setTimeout(resolve, 700));
      const later = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
      expect([...(page.blocked ?? []), ...(later.blocked ?? [])]).toContainEqual(expect.objectContaining({ kind: 'popup', origin: other.origin }));
      expect(other.connections()).toBe(before);
    } finally {
      await client.call('lease.release', { lease_id: lease.lease_id });
    }
  });
});

describe('a frame a page writes into a popup', () => {
  test('loads nothing from an origin documents may not come from, even one the egress proxy would connect to', async () => {
    // Operator-allowed: the proxy connects to it (a subresource may come from there), but no document may.
    const allowed = await startRequestCounter();
    const profiles = await temporaryDirectory('popup-frame-');
    const fixtures = await startFixtureServer();
    const host = await startBrowserHost(testHostConfig(profiles.dir, { egress: { allow: [allowed.origin], deny: [] } }));
    try {
      const client = await connectHost(host.url, TEST_SECRET);
      const lease = await acquire(client, 'popup-frame', 60_000, undefined, [fixtures.origin]);
      await navigate(client, lease.lease_id, fixtures.url(`confinement/hostile.html?mode=popup-frame&to=${encodeURIComponent(allowed.origin)}`));
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
      expect(allowed.requests()).toEqual([]);
      await client.close();
    } finally {
      await host.close();
      await fixtures.close();
      await allowed.close();
      await profiles.remove();
    }
  });
});
