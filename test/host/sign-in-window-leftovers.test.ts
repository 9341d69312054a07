import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, test, vi } from 'vitest';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import { ceremonyId } from '../support/ceremony-fixture.ts';
import { type FixtureServer, startFixtureServer } from '../support/fixture-server.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';
import { profileWindowUrls } from '../support/person-window.ts';

// Nothing a provider's page did while the person signed in reaches the agent's next lease
// (README "Signing in through an identity provider": refusals, dialogs and every page of the
// sign-in stay out of the agent's observations), whatever the provider's page does at the end.

const PROVIDER_PAGES: Record<string, string> = {
  // Raises dialogs and tries navigations elsewhere, again and again.
  '/noisy': `<!doctype html><title>Acme ID</title><h1>Acme ID: jane@example.com</h1><script>
    let n = 0;
    setInterval(() => {
      n += 1;
      if (n % 2) alert('Acme ID says: jane@example.com, session ' + n);
      else location.href = 'http://127.0.0.2:9/elsewhere-' + n;
    }, 250);
  </script>`,
  // Slow to leave: its pagehide handler keeps the page busy and reports itself on the way out.
  '/clingy': `<!doctype html><title>Acme ID</title><h1>Acme ID: jane@example.com</h1><script>
    addEventListener('pagehide', () => {
      navigator.sendBeacon('http://127.0.0.2:9/beacon-on-the-way-out', 'jane@example.com');
      const until = Date.now() + 7000;
      while (Date.now() < until) {}
    });
    setInterval(() => { try { fetch('http://127.0.0.3:9/poll', { mode: 'no-cors' }).catch(() => {}); } catch {} }, 100);
  </script>`,
};

interface World {
  readonly site: FixtureServer;
  readonly provider: string;
  readonly host: BrowserHost;
  readonly client: HostClient;
  readonly profilesDir: string;
}

async function withWorld(use: (world: World) => Promise<void>): Promise<void> {
  const site = await startFixtureServer();
  const server: Server = createServer((request, response) => {
    const html = PROVIDER_PAGES[new URL(request.url ?? '/', 'http://x').pathname];
    response.writeHead(html ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' }).end(html ?? 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const provider = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const profiles = await temporaryDirectory('leftovers-');
  const host = await startBrowserHost(testHostConfig(profiles.dir, { personDebugging: true, ceremonyPollMs: 200, egress: { allow: [provider], deny: [] } }));
  const client = await connectHost(host.url, TEST_SECRET);
  try {
    await use({ site, provider, host, client, profilesDir: profiles.dir });
  } finally {
    await client.close();
    await host.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await site.close();
    await profiles.remove();
  }
}

/** A ceremony whose sign-in page sends the window to the provider's `providerPath`; ended once the window is there. */
async function endAtProvider(world: World, profileId: string, providerPath: string): Promise<void> {
  const id = ceremonyId();
  await world.client.call('ceremony.begin', {
    ceremony_id: id,
    profile_id: profileId,
    origin: world.site.origin,
    generation: 1,
    sign_in_url: world.site.url(`redirect?to=${encodeURIComponent(`${world.provider}${providerPath}`)}`),
    protected_url: world.site.url('quiet.html'),
    timeout_ms: 60_000,
  });
  await vi.waitFor(async () => expect((await profileWindowUrls(world.profilesDir, profileId)).some((url) => url.startsWith(world.provider))).toBe(true), {
    timeout: 15_000,
    interval: 200,
  });
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  expect((await world.client.call('ceremony.end', { ceremony_id: id })).ended).toBe(true);
}

describe("a provider's page left open when the ceremony ends", () => {
  for (const providerPath of ['/noisy', '/clingy']) {
    test(`${providerPath}: the next lease sees nothing of it`, async () => {
      await withWorld(async (world) => {
        const profileId = `left-${providerPath.slice(1)}`;
        await endAtProvider(world, profileId, providerPath);
        const lease = await vi.waitFor(
          () => world.client.call('lease.acquire', { run_id: 'run_next', profile_id: profileId, origins: [world.site.origin], ttl_ms: 60_000 }),
          { timeout: 15_000, interval: 200 },
        );
        const observed = await world.client.request('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
        const text = JSON.stringify(observed);
        expect(text).not.toContain('jane@example.com');
        expect(text).not.toContain('127.0.0.2');
        expect(text).not.toContain('127.0.0.3');
        expect(text).not.toContain(world.provider);
        // A second look a moment later: still nothing of the provider.
        await new Promise((resolve) => setTimeout(resolve, 8_000));
        const later = JSON.stringify(await world.client.request('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 }));
        expect(later).not.toContain('jane@example.com');
        expect(later).not.toContain('127.0.0.2');
        expect(later).not.toContain('127.0.0.3');
        expect(later).not.toContain(world.provider);
      });
    });
  }
});
