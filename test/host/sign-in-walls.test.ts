import { describe, expect, test as plain } from 'vitest';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import { accountSiteDefinition } from '../../scripts/account-site.ts';
import type { SignInReasonCode } from '../../shared/authentication.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { acquire, TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';
import { type SignInWallsSite, startSignInWallsSite } from '../support/sign-in-walls-site.ts';

// In real Chromium: the sign-in walls real sites use are flagged with the evidence that
// decided it, and ordinary pages that merely contain an email field or a "Sign in" link are not.

interface WallsWorld {
  readonly site: SignInWallsSite;
  readonly host: BrowserHost;
}

const test = plain
  .extend('world', { scope: 'file' }, async ({}, { onCleanup }): Promise<WallsWorld> => {
    const site = await startSignInWallsSite();
    const profiles = await temporaryDirectory('host-walls-');
    const host = await startBrowserHost(testHostConfig(profiles.dir));
    onCleanup(async () => {
      await host.close();
      await site.close();
      await profiles.remove();
    });
    return { site, host };
  })
  .extend('client', async ({ world }, { onCleanup }): Promise<HostClient> => {
    const client = await connectHost(world.host.url, TEST_SECRET);
    onCleanup(() => client.close());
    return client;
  });

const WALLS: ReadonlyArray<{ path: string; shape: string; reasons: SignInReasonCode[]; requested?: string }> = [
  {
    path: '/identifier-first/reports',
    shape: 'an identifier-first page (email, then password on the next page)',
    reasons: ['identifier_form', 'sign_in_heading', 'redirected_with_return_url'],
    requested: '/identifier-first/reports',
  },
  {
    path: '/sso/reports',
    shape: 'a page of only single-sign-on buttons',
    reasons: ['single_sign_on', 'sign_in_heading', 'redirected_with_return_url'],
    requested: '/sso/reports',
  },
  { path: '/passkey/signin', shape: 'a passkey prompt', reasons: ['passkey', 'sign_in_heading'] },
  { path: '/passkey-field/signin', shape: 'a field offering passkeys', reasons: ['passkey'] },
  { path: '/shadow/signin', shape: 'a sign-in form in a closed shadow root', reasons: ['password_field', 'identifier_form'] },
  { path: '/declarative-shadow/signin', shape: 'a password field in a declarative closed shadow root', reasons: ['password_field'] },
  { path: '/unauthorized/reports', shape: 'a page answered 401', reasons: ['unauthorized'] },
  {
    path: '/spa/signin',
    shape: 'an identifier-first page without a form element, its field deep in the page',
    reasons: ['identifier_form', 'sign_in_heading'],
  },
  { path: '/plain-username/signin', shape: 'a username field without autocomplete', reasons: ['identifier_form', 'sign_in_heading'] },
  { path: '/framed/signin', shape: 'a sign-in form in a same-origin frame', reasons: ['password_field', 'sign_in_heading'] },
  { path: '/hostile/signin', shape: 'a sign-in page whose scripts hang or fake the built-ins', reasons: ['identifier_form', 'sign_in_heading'] },
];

const ORDINARY: ReadonlyArray<{ path: string; shape: string }> = [
  { path: '/newsletter', shape: 'a newsletter form with an email field and "Sign up"' },
  { path: '/search', shape: 'a site search' },
  { path: '/home', shape: 'a public page with a "Sign in" link in its header' },
  { path: '/help/recover-account', shape: 'an account-recovery help article' },
  { path: '/de/newsletter', shape: 'a German newsletter footer ("Anmelden")' },
  { path: '/nl/newsletter', shape: 'a Dutch newsletter footer ("Aanmelden")' },
  { path: '/pt/contact', shape: 'a Portuguese contact form ("Entrar em contato")' },
  { path: '/help/sign-in', shape: 'a help page titled "Sign in to your account" with a contact form' },
  { path: '/blog/login-redesign', shape: 'a blog post titled "Login page redesign" with a newsletter form' },
  { path: '/account/security', shape: 'a signed-in "Login & security" page with "Add a passkey"' },
  { path: '/docs/sign-in-with-apple', shape: 'documentation of "Sign in with Apple"' },
  { path: '/course/login-flows', shape: 'a course page "Login flows" with "Continue with lesson 2"' },
  { path: '/article', shape: 'a cookie consent page a redirect carries the article back to' },
  { path: '/hostile/newsletter', shape: 'a newsletter page whose scripts hang or fake the built-ins' },
];

describe('sign-in walls by evidence', () => {
  test.for(WALLS)('$shape is a sign-in wall, with its reasons', async (wall, { world, client }) => {
    const lease = await acquire(client, 'walls', 60_000, undefined, [world.site.origin]);
    try {
      const seen = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${world.site.origin}${wall.path}`, timeout_ms: 15_000 });
      expect(seen.sign_in?.origin).toBe(world.site.origin);
      expect(seen.sign_in?.reasons.map((reason) => reason.code).sort()).toEqual([...wall.reasons].sort());
      for (const reason of seen.sign_in?.reasons ?? []) expect(reason.detail.length).toBeGreaterThan(5);
      expect(seen.sign_in?.requested_url).toBe(wall.requested === undefined ? undefined : `${world.site.origin}${wall.requested}`);
    } finally {
      await client.call('lease.release', { lease_id: lease.lease_id });
    }
  });

  test.for(ORDINARY)('$shape is not a sign-in wall', async (ordinary, { world, client }) => {
    const lease = await acquire(client, 'walls', 60_000, undefined, [world.site.origin]);
    try {
      const seen = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${world.site.origin}${ordinary.path}`, timeout_ms: 15_000 });
      expect(seen.title).not.toBe('Not found');
      expect(seen).not.toHaveProperty('sign_in');
    } finally {
      await client.call('lease.release', { lease_id: lease.lease_id });
    }
  });
});

describe('pages that fight the host', () => {
  test.for(['/hostile/signin', '/hostile/newsletter'])(
    "%s: the evidence read runs none of the page's code: the page answers the next read and act at once",
    async (path, { world, client }) => {
      const lease = await acquire(client, 'walls-hostile', 60_000, undefined, [world.site.origin]);
      try {
        await client.call('page.navigate', { lease_id: lease.lease_id, url: `${world.site.origin}${path}`, timeout_ms: 15_000 });
        const seen = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 10_000 });
        const press = /button "Press" \[ref=(\w+)\]/.exec(seen.snapshot)?.[1];
        const pressed = await client.call('page.act', {
          lease_id: lease.lease_id,
          action: { action: 'click', revision: seen.revision, reference: press ?? 'e0' },
          timeout_ms: 10_000,
        });
        expect(pressed.snapshot).toContain('pressed');
      } finally {
        await client.call('lease.release', { lease_id: lease.lease_id });
      }
    },
  );

  test('a wall seen again is still a wall: a 401 page and a redirect keep their evidence on a second observe', async ({ world, client }) => {
    const lease = await acquire(client, 'walls-again', 60_000, undefined, [world.site.origin]);
    try {
      for (const path of ['/unauthorized/reports', '/sso/reports']) {
        const first = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${world.site.origin}${path}`, timeout_ms: 15_000 });
        const again = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 10_000 });
        expect(again.sign_in?.reasons.map((reason) => reason.code).sort(), path).toEqual(first.sign_in?.reasons.map((reason) => reason.code).sort());
      }
    } finally {
      await client.call('lease.release', { lease_id: lease.lease_id });
    }
  });
});

describe('identity providers named by definitions', () => {
  test('a page of single-sign-on choices on an identity provider an enabled definition names is a wall; elsewhere the same page is not', async ({
    world,
    client,
  }) => {
    const url = `${world.site.origin}/idp/choose`;
    const lease = await acquire(client, 'idp-unknown', 60_000, undefined, [world.site.origin]);
    try {
      const seen = await client.call('page.navigate', { lease_id: lease.lease_id, url, timeout_ms: 15_000 });
      expect(seen).not.toHaveProperty('sign_in');
    } finally {
      await client.call('lease.release', { lease_id: lease.lease_id });
    }
    const profiles = await temporaryDirectory('host-idp-');
    const definition = { ...accountSiteDefinition('http://127.0.0.1:9'), identity_providers: [world.site.origin] };
    const host = await startBrowserHost(testHostConfig(profiles.dir, { siteDefinitions: [definition] }));
    const other = await connectHost(host.url, TEST_SECRET);
    try {
      const idpLease = await acquire(other, 'idp-known', 60_000, undefined, [world.site.origin]);
      const seen = await other.call('page.navigate', { lease_id: idpLease.lease_id, url, timeout_ms: 15_000 });
      expect(seen.sign_in?.reasons.map((reason) => reason.code).sort()).toEqual(['identity_provider', 'single_sign_on']);
      await other.call('lease.release', { lease_id: idpLease.lease_id });
    } finally {
      await other.close();
      await host.close();
      await profiles.remove();
    }
  });
});
