import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, test as plain } from 'vitest';
import { ConfigError, parseHostConfig } from '../../browser-host/config.ts';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import { BUILT_IN_SITE_DEFINITIONS, SiteCatalog } from '../../browser-host/site-verification/catalog.ts';
import { type AccountSite, accountSiteDefinition, startAccountSite } from '../../scripts/account-site.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import { httpOrigin } from '../../shared/origin.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { acquire, TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';

const SECRET = 'x'.repeat(32);

describe('http origins of pages', () => {
  plain('only an http(s) URL has one: a blob: or data: URL never counts as a page of an http origin', () => {
    expect(httpOrigin('HTTPS://Accounts.Example.test:443/signin?next=/')).toBe('https://accounts.example.test');
    expect(httpOrigin('http://127.0.0.1:8123/reports')).toBe('http://127.0.0.1:8123');
    expect(httpOrigin('blob:https://accounts.example.test/3f1c')).toBeUndefined();
    expect(httpOrigin('data:text/html,<form>')).toBeUndefined();
    expect(httpOrigin('about:blank')).toBeUndefined();
    expect(httpOrigin('not a url')).toBeUndefined();
  });
});

describe('site verification catalog', () => {
  plain('the built-in catalog is empty, and a host without a catalog file uses no definition', () => {
    expect(BUILT_IN_SITE_DEFINITIONS).toEqual([]);
    const config = parseHostConfig({ HOST_SHARED_SECRET: SECRET });
    expect(config.siteDefinitions).toEqual([]);
    expect(new SiteCatalog(config.siteDefinitions).size).toBe(0);
    expect(config).toMatchObject({ edgeUrl: undefined, personDebugging: false, ceremonyPollMs: 1_000 });
  });

  plain('an enabled definition without a reviewed fixture is a ConfigError at start-up; so are a broken file and an unknown field', async () => {
    const dir = await temporaryDirectory('catalog-');
    try {
      const unreviewed = { ...accountSiteDefinition('http://127.0.0.1:1234'), reviewed_fixture: undefined };
      const file = path.join(dir.dir, 'catalog.json');
      await writeFile(file, JSON.stringify({ definitions: [unreviewed] }));
      expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SITE_DEFINITIONS: file })).toThrow(ConfigError);
      expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SITE_DEFINITIONS: file })).toThrow(/HOST_SITE_DEFINITIONS .*reviewed_fixture/);

      await writeFile(file, '{"definitions": [');
      expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SITE_DEFINITIONS: file })).toThrow(/HOST_SITE_DEFINITIONS .*not JSON/);
      await writeFile(file, JSON.stringify({ definitions: [{ ...accountSiteDefinition('http://127.0.0.1:1234'), script: 'alert(1)' }] }));
      expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SITE_DEFINITIONS: file })).toThrow(ConfigError);
      expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SITE_DEFINITIONS: path.join(dir.dir, 'missing.json') })).toThrow(/cannot read/);
      expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_EDGE_URL: 'ftp://edge' })).toThrow(/HOST_EDGE_URL/);
      expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_CEREMONY_POLL_MS: '10' })).toThrow(/HOST_CEREMONY_POLL_MS/);
    } finally {
      await dir.remove();
    }
  });

  plain('only enabled definitions are used, looked up by origin; the highest enabled version wins', async () => {
    const dir = await temporaryDirectory('catalog-');
    try {
      const origin = 'http://127.0.0.1:1234';
      const v1 = accountSiteDefinition(origin);
      const v2 = { ...v1, version: 2, protected_path: '/reports/v2' };
      const v3 = { ...v1, version: 3, enabled: false, reviewed_fixture: undefined };
      const other = { ...v1, id: 'other-site', origin: 'https://example.test', enabled: false, reviewed_fixture: undefined };
      const file = path.join(dir.dir, 'catalog.json');
      await writeFile(file, JSON.stringify({ definitions: [v1, v2, v3, other] }));
      const config = parseHostConfig({
        HOST_SHARED_SECRET: SECRET,
        HOST_SITE_DEFINITIONS: file,
        HOST_EDGE_URL: 'http://127.0.0.1:8787/',
        HOST_PERSON_DEBUGGING: '1',
      });
      expect(config.siteDefinitions).toHaveLength(4);
      expect(config).toMatchObject({ edgeUrl: 'http://127.0.0.1:8787', personDebugging: true });
      const catalog = new SiteCatalog(config.siteDefinitions);
      expect(catalog.size).toBe(1);
      expect(catalog.forOrigin(origin)).toMatchObject({ version: 2, protected_path: '/reports/v2' });
      expect(catalog.forOrigin('https://example.test')).toBeUndefined();
    } finally {
      await dir.remove();
    }
  });
});

interface SignalWorld {
  /** A site the host has the reviewed definition for. */
  readonly known: AccountSite;
  /** A site the host knows nothing about. */
  readonly unknown: AccountSite;
  readonly host: BrowserHost;
}

/** Small windows, so the sign-in form needs a continuation read. */
const test = plain
  .extend('world', { scope: 'file' }, async ({}, { onCleanup }): Promise<SignalWorld> => {
    const known = await startAccountSite();
    const unknown = await startAccountSite();
    const profiles = await temporaryDirectory('host-signal-');
    const host = await startBrowserHost(
      testHostConfig(profiles.dir, { siteDefinitions: [accountSiteDefinition(known.origin)], window: { maxNodes: 6, maxBytes: 32 * 1024 } }),
    );
    onCleanup(async () => {
      await host.close();
      await known.close();
      await unknown.close();
      await profiles.remove();
    });
    return { known, unknown, host };
  })
  .extend('client', async ({ world }, { onCleanup }): Promise<HostClient> => {
    const client = await connectHost(world.host.url, TEST_SECRET);
    onCleanup(() => client.close());
    return client;
  });

describe('the sign-in signal', () => {
  test('a sign-in page of a site with a definition is flagged by the definition; of an unknown site, by its password field', async ({ world, client }) => {
    const lease = await acquire(client, 'signal', 60_000, undefined, [world.known.origin, world.unknown.origin]);
    try {
      const known = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${world.known.origin}/signin`, timeout_ms: 15_000 });
      expect(known.sign_in).toEqual({
        origin: world.known.origin,
        reasons: [{ code: 'definition', detail: 'the sign-in page of site definition fixture-reports' }],
        definition: { id: 'fixture-reports', version: 1 },
      });

      const unknown = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${world.unknown.origin}/signin`, timeout_ms: 15_000 });
      expect(unknown.sign_in).toMatchObject({
        origin: world.unknown.origin,
        reasons: expect.arrayContaining([{ code: 'password_field', detail: 'a visible password field' }]),
      });

      // A plain observe is a full capture too; a continuation read is not, and carries no signal.
      const observed = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
      expect(observed.sign_in).toMatchObject({
        origin: world.unknown.origin,
        reasons: expect.arrayContaining([{ code: 'password_field', detail: 'a visible password field' }]),
      });
      expect(observed.window.continuation).toBeDefined();
      const continued = await client.call('page.observe', { lease_id: lease.lease_id, continuation: observed.window.continuation, timeout_ms: 15_000 });
      expect(continued).not.toHaveProperty('sign_in');
    } finally {
      await client.call('lease.release', { lease_id: lease.lease_id });
    }
  });

  test('a challenge page is flagged by the definition; public pages carry no signal', async ({ world, client }) => {
    const lease = await acquire(client, 'signal', 60_000, undefined, [world.known.origin, world.unknown.origin]);
    try {
      const challenge = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${world.known.origin}/challenge`, timeout_ms: 15_000 });
      expect(challenge.sign_in).toMatchObject({ reasons: [{ code: 'definition' }], definition: { id: 'fixture-reports' } });
      for (const site of [world.known, world.unknown]) {
        const about = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${site.origin}/public`, timeout_ms: 15_000 });
        expect(about.title).toBe('About Reports');
        expect(about).not.toHaveProperty('sign_in');
      }
      // A protected page without a session redirects to sign-in: flagged after the redirect.
      const redirected = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${world.known.origin}/reports`, timeout_ms: 15_000 });
      expect(new URL(redirected.url).pathname).toBe('/signin');
      expect(redirected.sign_in).toMatchObject({ reasons: [{ code: 'definition' }], requested_url: `${world.known.origin}/reports` });
    } finally {
      await client.call('lease.release', { lease_id: lease.lease_id });
    }
  });

  test('an act that lands on a sign-in form is flagged (a wrong password shows the form again)', async ({ world, client }) => {
    const lease = await acquire(client, 'signal', 60_000, undefined, [world.known.origin, world.unknown.origin]);
    try {
      let page = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${world.unknown.origin}/signin`, timeout_ms: 15_000 });
      page = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
      const windows = [page.snapshot];
      let cursor = page.window.continuation;
      for (let reads = 0; cursor !== undefined && reads < 10; reads++) {
        const next = await client.call('page.observe', { lease_id: lease.lease_id, continuation: cursor, timeout_ms: 15_000 });
        windows.push(next.snapshot);
        cursor = next.window.continuation;
      }
      const button = refOf(windows.join('\n'), 'button', 'Sign in');
      const after = await client.call('page.act', {
        lease_id: lease.lease_id,
        action: { action: 'click', revision: page.revision, reference: button },
        timeout_ms: 15_000,
      });
      expect(world.unknown.counters().failed_sign_ins).toBe(1);
      expect(after.sign_in).toMatchObject({
        origin: world.unknown.origin,
        reasons: expect.arrayContaining([{ code: 'password_field', detail: 'a visible password field' }]),
      });
    } finally {
      await client.call('lease.release', { lease_id: lease.lease_id });
    }
  });
});
