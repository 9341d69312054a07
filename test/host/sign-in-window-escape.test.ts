import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test } from 'vitest';
import { startBrowserHost } from '../../browser-host/host.ts';
import { ceremonyId, claimsOf } from '../support/ceremony-fixture.ts';
import { startFixtureServer } from '../support/fixture-server.ts';
import { connectHost } from '../support/host-client.ts';
import { TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';
import { atProfileWindow } from '../support/person-window.ts';

// The sign-in window may go to any origin, but never to a loopback/private/link-local
// address however it is spelled, nor to the host's own port.

test('the sign-in window reaches no loopback server in any spelling, nor the host itself', async () => {
  let hits = 0;
  const intranet: Server = createServer((_request, response) => {
    hits += 1;
    response.writeHead(200, { 'Content-Type': 'text/html' }).end('<h1>intranet</h1>');
  });
  await new Promise<void>((resolve) => intranet.listen(0, '0.0.0.0', () => resolve()));
  const port = (intranet.address() as AddressInfo).port;
  const site = await startFixtureServer();
  const profiles = await temporaryDirectory('escape-');
  const host = await startBrowserHost(testHostConfig(profiles.dir, { personDebugging: true, ceremonyPollMs: 200 }));
  const client = await connectHost(host.url, TEST_SECRET);
  try {
    const id = ceremonyId();
    await client.call('ceremony.begin', {
      ceremony_id: id,
      profile_id: 'escape',
      origin: site.origin,
      generation: 1,
      sign_in_url: site.url('quiet.html'),
      protected_url: site.url('button.html'),
      timeout_ms: 120_000,
    });
    const hostPort = new URL(host.url).port;
    const targets = [
      `http://127.0.0.1:${port}/`,
      `http://localhost:${port}/`,
      `http://0.0.0.0:${port}/`,
      `http://127.1:${port}/`,
      `http://2130706433:${port}/`,
      `http://0x7f000001:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://[::1]:${port}/`,
      `http://169.254.169.254/latest/meta-data/`,
      `http://127.0.0.1:${hostPort}/`,
      `http://localhost:${hostPort}/`,
      'file:///etc/passwd',
      'chrome://version',
    ];
    const landed: string[] = [];
    await atProfileWindow(profiles.dir, 'escape', site.origin, async (page) => {
      for (const target of targets) {
        // Top-level, as a provider's redirect or link would (a script navigation from the page).
        await page
          .evaluate((url) => {
            location.href = url;
          }, target)
          .catch(() => {});
        await new Promise((resolve) => setTimeout(resolve, 700));
        const text = await page.evaluate(() => document.body?.textContent ?? '').catch(() => '');
        if (text.includes('intranet') || text.includes('"protocol"') || text.includes('root:')) landed.push(target);
        if (!page.url().startsWith(site.origin)) await page.goto(site.url('quiet.html')).catch(() => {});
      }
    });
    expect(landed).toEqual([]);
    expect(hits).toBe(0);
    expect((await client.call('ceremony.end', { ceremony_id: id })).ended).toBe(true);
    const claims = await claimsOf(await client.call('ceremony.status', { ceremony_id: id }));
    expect(claims.visited_origins).toEqual([site.origin]);
  } finally {
    await client.close();
    await host.close();
    await site.close();
    intranet.closeAllConnections();
    await new Promise<void>((resolve) => intranet.close(() => resolve()));
    await profiles.remove();
  }
});
