import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test } from 'vitest';
import { startBrowserHost } from '../../browser-host/host.ts';
import { ceremonyId, claimsOf } from '../support/ceremony-fixture.ts';
import { connectHost } from '../support/host-client.ts';
import { TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';
import { atProfileWindow } from '../support/person-window.ts';
import { until } from '../support/until.ts';

// `visited_origins` says where the person's window went (README: "the host reports the
// origins the window visited"). The host's own verification loads (a temporary page of the same
// profile) are not the person's window.

/** Starts a loopback server answering `route(pathname)`. */
async function serve(route: (pathname: string, origin: string) => { status: number; headers?: Record<string, string>; body?: string }) {
  let origin = '';
  const server: Server = createServer((request, response) => {
    const answer = route(new URL(request.url ?? '/', 'http://x').pathname, origin);
    response.writeHead(answer.status, { 'Content-Type': 'text/html; charset=utf-8', ...answer.headers }).end(answer.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

test("a verification load that the site bounces to its identity provider is not where the person's window went", async () => {
  const provider = await serve(() => ({ status: 200, body: '<!doctype html><title>Acme ID</title><h1>Choose an account</h1>' }));
  // The site: a public home page, a sign-in page, and a protected page that sends anyone not signed in straight to the provider.
  let privateLoads = 0;
  const site = await serve((pathname) => {
    if (pathname === '/private') privateLoads += 1;
    if (pathname === '/private') return { status: 302, headers: { Location: `${provider.origin}/authorize?client_id=shop` } };
    if (pathname === '/login')
      return {
        status: 200,
        body: '<!doctype html><title>Sign in</title><h1>Sign in</h1><form><input type=password aria-label=Password><button>Sign in</button></form>',
      };
    return { status: 200, body: '<!doctype html><title>Shop</title><h1>Welcome to the shop</h1><p>Browse our products.</p>' };
  });
  const profiles = await temporaryDirectory('visited-verification-');
  const host = await startBrowserHost(
    testHostConfig(profiles.dir, { personDebugging: true, ceremonyPollMs: 200, egress: { allow: [provider.origin], deny: [] } }),
  );
  const client = await connectHost(host.url, TEST_SECRET);
  try {
    const id = ceremonyId();
    const answer = await client.call('ceremony.begin', {
      ceremony_id: id,
      profile_id: 'bounced',
      origin: site.origin,
      generation: 1,
      sign_in_url: `${site.origin}/login`,
      protected_url: `${site.origin}/private`,
      timeout_ms: 120_000,
    });
    expect(answer.state).toBe('awaiting_person');
    // The person goes to the site's home page instead of signing in; the window never leaves the site.
    await atProfileWindow(profiles.dir, 'bounced', `${site.origin}/login`, (page) => page.goto(`${site.origin}/home`));
    // Polling finds the person past the sign-in page and verifies, loading /private (which goes to the provider).
    const loadsBefore = privateLoads;
    await until(() => privateLoads >= loadsBefore + 2, 'two verification loads of /private after the person left the sign-in page', 30_000);
    expect((await client.call('ceremony.end', { ceremony_id: id })).ended).toBe(true);
    const claims = await claimsOf(await client.call('ceremony.status', { ceremony_id: id }));
    // Before the fix: [site, provider, site, ...]: the verification's load is reported as the person's route.
    expect(claims.visited_origins).toEqual([site.origin]);
  } finally {
    await client.close();
    await host.close();
    await site.close();
    await provider.close();
    await profiles.remove();
  }
});
