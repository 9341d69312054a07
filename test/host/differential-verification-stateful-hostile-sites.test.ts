import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { HostConfig } from '../../browser-host/config.ts';
import { startBrowserHost, type BrowserHost } from '../../browser-host/host.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { TEST_SECRET, acquire, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';

// Second review pass (ADR-0164 part 2: "a hostile page cannot fake a verified sign-in for an
// UNKNOWN site; cookie presence is never proof"). The first pass made the control load require a
// visible password field and present the profile's user agent. Two differences between the
// profile and the clean control remain that a site can key on, without any session existing:
// - state: the profile has visited the site before (any cookie), the control never has;
// - headed vs headless: the control is always headless; e.g. outer size == inner size.
// Every site below has NO session mechanism: nobody can sign in, so `verified` is always false.

const FORM = '<h1>Sign in</h1><form method="post" action="/login"><label>User <input name="u"></label><label>Password <input type="password" name="p"></label><button>Sign in</button></form>';
const CONTENT = '<h1>Your account</h1><p>Nothing here depends on a session.</p>';

function html(response: ServerResponse, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers }).end(`<!doctype html><title>Site</title>${body}`);
}

/**
 * `/first-visit`: a visitor without any cookie gets a password form (and a tracking cookie that
 * is no session); any visitor with a cookie gets the page. `/fingerprint`: the same HTML for
 * everyone; a script shows a password form when the window has no browser chrome (outer size
 * equals inner size: headless), else the page. `/login`: a password form.
 */
async function startSite(): Promise<{ origin: string; close: () => Promise<void> }> {
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://x');
    switch (url.pathname) {
      case '/first-visit':
        if (!request.headers.cookie) return html(response, FORM, { 'set-cookie': 'visitor=1; Path=/; Max-Age=86400' });
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

const ceremonyId = () => `cer_${randomBytes(9).toString('base64url')}`;

function world(overrides: Partial<HostConfig>) {
  let site: Awaited<ReturnType<typeof startSite>>;
  let profiles: Awaited<ReturnType<typeof temporaryDirectory>>;
  let host: BrowserHost;
  let client: HostClient;
  beforeAll(async () => {
    site = await startSite();
    profiles = await temporaryDirectory('host-review2-');
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

async function beginAndEnd(client: HostClient, profileId: string, origin: string, protectedPath: string): Promise<string> {
  const answer = await client.call('ceremony.begin', {
    ceremony_id: ceremonyId(),
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

describe('differential verification: prior visit state is not a session (headless host)', () => {
  const w = world({ headless: true });

  test('a page that shows a password form only to first-time (cookie-less) visitors is never verified without a sign-in', async () => {
    const client = w.client();
    const origin = w.site().origin;
    // The run meets the wall: its first visit shows a password form (and sets a tracking cookie).
    const lease = await acquire(client, 'first-visit');
    const wall = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${origin}/first-visit`, timeout_ms: 15_000 });
    expect(wall.sign_in).toMatchObject({ origin, evidence: 'password_field' });
    await client.call('lease.release', { lease_id: lease.lease_id });
    // Nobody signs in (there is nothing to sign in to).
    expect(await beginAndEnd(client, 'first-visit', origin, '/first-visit')).not.toBe('verified');
  });
});

describe('differential verification: a headless fingerprint other than the user agent is not proof (headed host, headless control)', () => {
  const w = world({ headless: false, display: undefined });

  test('a page that shows a password form to a window without browser chrome is never verified without a sign-in', async () => {
    expect(await beginAndEnd(w.client(), 'fingerprint', w.site().origin, '/fingerprint')).not.toBe('verified');
  });
});
