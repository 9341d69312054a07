import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startBrowserHost, type BrowserHost } from '../../browser-host/host.ts';
import type { HostConfig } from '../../browser-host/config.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { acquire, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';

// Review regressions (ADR-0164 part 2, guarantee: "a hostile page cannot fake a verified sign-in
// for an UNKNOWN site; cookie presence is never proof"). Differential verification must not say
// `verified` when nobody signed in. Each site below has NO session mechanism at all: there is no
// account, nothing to sign in to. A `verified` answer is therefore always false.

const LOGIN_PAGE = '<!doctype html><title>Sign in</title><h1>Sign in</h1><form method="post" action="/login"><label>User <input name="u"></label><label>Password <input type="password" name="p"></label><button>Sign in</button></form>';

function html(response: ServerResponse, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers }).end(body);
}

function redirect(response: ServerResponse, to: string): void {
  response.writeHead(302, { location: to }).end();
}

/**
 * A site without any session. `/home` is a public page that, like many real sites, first sends a
 * visitor without the (non-session) `consent=yes` cookie to `/welcome` (a consent / locale
 * interstitial), which sets the cookie. `/ua-gated` serves a page to a headed browser and sends
 * a headless user agent to `/login`. `/login` shows a password field.
 */
async function startSessionlessSite(): Promise<{ origin: string; close: () => Promise<void> }> {
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://x');
    const cookies = request.headers.cookie ?? '';
    switch (url.pathname) {
      case '/welcome':
        return html(response, '<!doctype html><title>Welcome</title><h1>Welcome</h1><a href="/home">Continue</a>', { 'set-cookie': 'consent=yes; Path=/; Max-Age=86400' });
      case '/home':
        if (!cookies.includes('consent=yes')) return redirect(response, '/welcome');
        return html(response, '<!doctype html><title>Home</title><h1>Public home</h1><a href="/login">Sign in</a>');
      case '/ua-gated':
        if ((request.headers['user-agent'] ?? '').includes('Headless')) return redirect(response, '/login');
        return html(response, '<!doctype html><title>Account</title><h1>Your account</h1><p>Nothing here depends on a session.</p>');
      case '/login':
        return html(response, LOGIN_PAGE);
      default:
        response.writeHead(404).end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const ceremonyId = () => `cer_${randomBytes(9).toString('base64url')}`;

function world(overrides: Partial<HostConfig>) {
  let site: Awaited<ReturnType<typeof startSessionlessSite>>;
  let profiles: Awaited<ReturnType<typeof temporaryDirectory>>;
  let host: BrowserHost;
  let client: HostClient;
  beforeAll(async () => {
    site = await startSessionlessSite();
    profiles = await temporaryDirectory('host-review-');
    host = await startBrowserHost(testHostConfig(profiles.dir, { siteDefinitions: [], ceremonyPollMs: 200, ...overrides }));
    client = await connectHost(host.url, 'test-shared-secret-of-at-least-32-bytes!!');
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await host?.close();
    await site?.close();
    await profiles?.remove();
  }, 60_000);
  return { site: () => site, client: () => client };
}

describe('differential verification: a non-session cookie is not proof (headless host)', () => {
  const w = world({ headless: true });

  test('a public page that sends first-time visitors to a consent interstitial is never verified without a sign-in', async () => {
    const client = w.client();
    const origin = w.site().origin;
    // The run browses the site: the public home page (via the consent interstitial), then clicks
    // "Sign in", which shows a password field: the sign-in wall. For an act the edge sends the page
    // before the call (run.latestUrl = /home) as protected_url (edge/pipeline/dispatch.ts:85).
    const lease = await acquire(client, 'consent');
    await client.call('page.navigate', { lease_id: lease.lease_id, url: `${origin}/home`, timeout_ms: 15_000 });
    const wall = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${origin}/login`, timeout_ms: 15_000 });
    expect(wall.sign_in).toMatchObject({ origin, evidence: 'password_field' });
    await client.call('lease.release', { lease_id: lease.lease_id });

    // Nobody signs in: there is nothing to sign in to.
    const answer = await client.call('ceremony.begin', {
      ceremony_id: ceremonyId(),
      profile_id: 'consent',
      origin,
      generation: 1,
      sign_in_url: `${origin}/login`,
      protected_url: `${origin}/home`,
      timeout_ms: 60_000,
    });
    await client.call('ceremony.end', { ceremony_id: answer.ceremony_id });
    expect(answer.state).not.toBe('verified');
  });
});

describe('differential verification: a user-agent split is not proof (headed host, headless control)', () => {
  const w = world({ headless: false, display: undefined });

  test('a page that sends headless user agents to sign-in and serves headed ones is never verified without a sign-in', async () => {
    const client = w.client();
    const origin = w.site().origin;
    const answer = await client.call('ceremony.begin', {
      ceremony_id: ceremonyId(),
      profile_id: 'ua-split',
      origin,
      generation: 1,
      sign_in_url: `${origin}/login`,
      protected_url: `${origin}/ua-gated`,
      timeout_ms: 60_000,
    });
    await client.call('ceremony.end', { ceremony_id: answer.ceremony_id });
    expect(answer.state).not.toBe('verified');
  });
});
