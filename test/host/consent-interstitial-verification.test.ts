import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { acquire, hostTest } from '../support/host-fixture.ts';

// A site with no accounts at all, whose cookie consent page carries the requested page back in
// ?continue=. A consent cookie is never proof of a session: a clean control load that lands on
// the consent page was not sent to sign-in.

const FORM =
  '<h1>Sign in</h1><form method="post" action="/login"><label>User <input name="u"></label><label>Password <input type="password" name="p"></label><button>Sign in</button></form>';

function html(response: ServerResponse, body: string): void {
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><title>Site</title>${body}`);
}

/** A host with no site definitions, and the origin of the consent site (`origin`, file). */
const test = hostTest({ siteDefinitions: [], ceremonyPollMs: 200 }).extend('origin', { scope: 'file' }, async ({}, { onCleanup }) => {
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://site');
    const consented = (request.headers.cookie ?? '').includes('consent=yes');
    switch (url.pathname) {
      case '/consent':
        return html(
          response,
          `<h1>Before you continue</h1><p>We use cookies.</p><a href="/consent/accept?continue=${encodeURIComponent(url.searchParams.get('continue') ?? '/')}">Accept all</a> <a href="/consent/reject">Continue with necessary cookies only</a>`,
        );
      case '/consent/accept':
        return void response.writeHead(302, { location: url.searchParams.get('continue') ?? '/', 'set-cookie': 'consent=yes; Path=/; Max-Age=86400' }).end();
      case '/home':
        if (!consented) return void response.writeHead(302, { location: `/consent?continue=${encodeURIComponent('/home')}` }).end();
        return html(response, '<h1>Public home</h1><a href="/login">Sign in</a>');
      case '/login':
        return html(response, FORM);
      default:
        response.writeHead(404).end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  onCleanup(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

test('a consent page that carries the URL back is neither a sign-in wall nor, on a clean control load, proof that a profile is signed in', async ({
  client,
  origin,
}) => {
  const lease = await acquire(client, 'consent', 60_000, undefined, [origin]);
  const first = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${origin}/home`, timeout_ms: 15_000 });
  expect(new URL(first.url).pathname).toBe('/consent');
  expect(first).not.toHaveProperty('sign_in');
  // Cookies are accepted (no sign-in happens), then the run meets the site's sign-in form.
  await client.call('page.navigate', { lease_id: lease.lease_id, url: `${origin}/consent/accept?continue=%2Fhome`, timeout_ms: 15_000 });
  const wall = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${origin}/login`, timeout_ms: 15_000 });
  expect(wall.sign_in?.reasons.map((reason) => reason.code)).toContain('password_field');
  await client.call('lease.release', { lease_id: lease.lease_id });
  const answer = await client.call('ceremony.begin', {
    ceremony_id: `cer_${randomBytes(9).toString('base64url')}`,
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
