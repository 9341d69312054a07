import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { HostConfig } from '../../browser-host/config.ts';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { acquire, TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';

// Hostile sites (ADR-0164 part 2: "a hostile page cannot fake a verified sign-in for an
// UNKNOWN site; cookie presence is never proof"). Differential verification must not say
// `verified` when nobody signed in. The site below has NO session mechanism at all: there is no
// account, nothing to sign in to, so a `verified` answer is always false. Each path exploits a
// difference between the profile's load and a clean control load that is not a session.

const FORM =
  '<h1>Sign in</h1><form method="post" action="/login"><label>User <input name="u"></label><label>Password <input type="password" name="p"></label><button>Sign in</button></form>';
const CONTENT = '<h1>Your account</h1><p>Nothing here depends on a session.</p>';

function html(response: ServerResponse, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers }).end(`<!doctype html><title>Site</title>${body}`);
}

/**
 * - `/home`: a public page that first sends a visitor without the (non-session) `consent=yes`
 *   cookie to `/welcome`, a consent interstitial that sets it;
 * - `/ua-gated`: the page for a headed browser, `/login` for a headless user agent;
 * - `/first-visit`: a password form (and a tracking cookie) for a visitor without any cookie, the
 *   page for anyone with one;
 * - `/fingerprint`: the same HTML for everyone; a script shows a password form when the window
 *   has no browser chrome (outer size equals inner size: headless), else the page;
 * - `/login`: a password form.
 */
async function startSessionlessSite(): Promise<{ origin: string; close: () => Promise<void> }> {
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://x');
    const cookies = request.headers.cookie ?? '';
    switch (url.pathname) {
      case '/welcome':
        return html(response, '<h1>Welcome</h1><a href="/home">Continue</a>', { 'set-cookie': 'consent=yes; Path=/; Max-Age=86400' });
      case '/home':
        if (!cookies.includes('consent=yes')) return void response.writeHead(302, { location: '/welcome' }).end();
        return html(response, '<h1>Public home</h1><a href="/login">Sign in</a>');
      case '/ua-gated':
        if ((request.headers['user-agent'] ?? '').includes('Headless')) return void response.writeHead(302, { location: '/login' }).end();
        return html(response, CONTENT);
      case '/first-visit':
        if (!cookies) return html(response, FORM, { 'set-cookie': 'visitor=1; Path=/; Max-Age=86400' });
        return html(response, CONTENT);
      case '/fingerprint':
        return html(
          response,
          `<main id="m"></main><script>
            const headless = outerWidth === innerWidth && outerHeight === innerHeight;
            document.getElementById('m').innerHTML = headless ? ${JSON.stringify(FORM)} : ${JSON.stringify(CONTENT)};
          </script>`,
        );
      case '/login':
        return html(response, FORM);
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

/** A host (with no site definitions) and the sessionless site, for one describe block. */
function world(overrides: Partial<HostConfig>) {
  let site: Awaited<ReturnType<typeof startSessionlessSite>>;
  let profiles: Awaited<ReturnType<typeof temporaryDirectory>>;
  let host: BrowserHost;
  let client: HostClient;
  beforeAll(async () => {
    site = await startSessionlessSite();
    profiles = await temporaryDirectory('host-hostile-');
    host = await startBrowserHost(testHostConfig(profiles.dir, { siteDefinitions: [], ceremonyPollMs: 200, ...overrides }));
    client = await connectHost(host.url, TEST_SECRET);
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await host?.close();
    await site?.close();
    await profiles?.remove();
  }, 60_000);
  return { site: () => site, client: () => client };
}

/** Begins a ceremony for `protectedPath` (sign-in at `/login`), ends it, and answers the state `begin` reported. */
async function beginAndEnd(client: HostClient, profileId: string, origin: string, protectedPath: string): Promise<string> {
  const answer = await client.call('ceremony.begin', {
    ceremony_id: `cer_${randomBytes(9).toString('base64url')}`,
    profile_id: profileId,
    origin,
    generation: 1,
    sign_in_url: `${origin}/login`,
    protected_url: `${origin}${protectedPath}`,
    timeout_ms: 60_000,
  });
  await client.call('ceremony.end', { ceremony_id: answer.ceremony_id });
  return answer.state;
}

/** The run meets the wall as it would: its lease browses `paths`, the last one showing a password field. */
async function meetWall(client: HostClient, profileId: string, origin: string, paths: string[]): Promise<void> {
  const lease = await acquire(client, profileId, 60_000, undefined, [origin]);
  let last: Awaited<ReturnType<HostClient['call']>> | undefined;
  for (const path of paths) last = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${origin}${path}`, timeout_ms: 15_000 });
  expect((last as { sign_in?: unknown }).sign_in).toMatchObject({
    origin,
    reasons: expect.arrayContaining([expect.objectContaining({ code: 'password_field' })]),
  });
  await client.call('lease.release', { lease_id: lease.lease_id });
}

describe('differential verification: what a visit leaves behind is no session (headless host)', () => {
  const w = world({ headless: true });

  test('a public page that sends first-time visitors to a consent interstitial is never verified without a sign-in', async () => {
    const origin = w.site().origin;
    // The public home (via the consent interstitial), then "Sign in": for an act the edge sends the
    // page before the call (/home) as the protected page.
    await meetWall(w.client(), 'consent', origin, ['/home', '/login']);
    expect(await beginAndEnd(w.client(), 'consent', origin, '/home')).not.toBe('verified');
  });

  test('a page that shows a password form only to first-time (cookie-less) visitors is never verified without a sign-in', async () => {
    const origin = w.site().origin;
    await meetWall(w.client(), 'first-visit', origin, ['/first-visit']);
    expect(await beginAndEnd(w.client(), 'first-visit', origin, '/first-visit')).not.toBe('verified');
  });
});

describe('differential verification: a headed window and a headless one are not told apart (headed host)', () => {
  const w = world({ headless: false, display: undefined });

  test('a page that sends headless user agents to sign-in and serves headed ones is never verified without a sign-in', async () => {
    expect(await beginAndEnd(w.client(), 'ua-split', w.site().origin, '/ua-gated')).not.toBe('verified');
  });

  test('a page that shows a password form to a window without browser chrome is never verified without a sign-in', async () => {
    expect(await beginAndEnd(w.client(), 'fingerprint', w.site().origin, '/fingerprint')).not.toBe('verified');
  });
});
