import type { Page } from 'playwright-core';
import { describe, expect, test, vi } from 'vitest';
import type { HostConfig } from '../../browser-host/config.ts';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import type { LiveViewNotification } from '../../shared/live-view.ts';
import { ceremonyId, claimsOf, deliveredFor, type EventReceiver, startEventReceiver, stateBecomes } from '../support/ceremony-fixture.ts';
import { startFixtureServer } from '../support/fixture-server.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';
import { type IdentityProviderSite, type IdentityProviderSiteOptions, startIdentityProviderSite } from '../support/identity-provider-site.ts';
import { atProfileWindow, profileWindowUrls } from '../support/person-window.ts';

// A person signs in to a site through an identity provider on another origin (DESIGN.md section
// 18), in real Chromium, at the host's own window: the window follows the sign-in to the provider
// and back, the ceremony verifies on the site's protected page, and the event says where the
// window went. Real sign-in software on both ends (test/support/identity-provider-site.ts).

/** A host whose ceremonies report to a stand-in edge, with `egress` (and `sign-in origins`) of its own. */
interface World {
  readonly site: IdentityProviderSite;
  readonly host: BrowserHost;
  readonly receiver: EventReceiver;
  readonly profilesDir: string;
  readonly client: HostClient;
}

/** Starts the site, a receiver and a host configured by `hostOverrides(site)`; `use` runs against them; everything stops after. */
async function withWorld(
  siteOptions: IdentityProviderSiteOptions,
  hostOverrides: (site: IdentityProviderSite) => Partial<HostConfig>,
  use: (world: World) => Promise<void>,
): Promise<void> {
  const site = await startIdentityProviderSite(siteOptions);
  const receiver = await startEventReceiver(TEST_SECRET);
  const profiles = await temporaryDirectory('host-sign-in-origins-');
  let host: BrowserHost | undefined;
  let client: HostClient | undefined;
  try {
    host = await startBrowserHost(testHostConfig(profiles.dir, { edgeUrl: receiver.url, personDebugging: true, ceremonyPollMs: 200, ...hostOverrides(site) }));
    client = await connectHost(host.url, TEST_SECRET);
    await use({ site, host, receiver, profilesDir: profiles.dir, client });
  } finally {
    await client?.close();
    await host?.close();
    await receiver.close();
    await site.close();
    await profiles.remove();
  }
}

/** Begins a ceremony for the site's protected page on `profileId`; the sign-in page is the one the site redirects to. */
async function beginOn(world: World, profileId: string, id = ceremonyId()) {
  const { site } = world;
  const answer = await world.client.call('ceremony.begin', {
    ceremony_id: id,
    profile_id: profileId,
    origin: site.siteOrigin,
    generation: 1,
    sign_in_url: `${site.signInUrl}?callbackUrl=${encodeURIComponent(site.protectedUrl)}`,
    protected_url: site.protectedUrl,
    timeout_ms: 60_000,
  });
  return { id, answer };
}

/** The person signs in at the provider: the site's button, username and password, the code when asked, then Allow. */
async function signInAtProvider(page: Page, site: IdentityProviderSite): Promise<void> {
  await page.getByRole('button', { name: 'Sign in with Acme ID' }).click();
  await page.getByRole('heading', { name: 'Sign in to Acme ID' }).waitFor();
  await page.getByLabel('Username').fill(site.account.username);
  await page.getByLabel('Password').fill(site.account.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  if (site.account.code !== undefined) {
    await page.getByLabel('One-time code').fill(site.account.code);
    await page.getByRole('button', { name: 'Verify' }).click();
  }
  await page.getByRole('button', { name: 'Allow' }).click();
}

/** Acts as the person at the profile's window on the site's sign-in page. */
function atWindow<T>(world: World, profileId: string, act: (page: Page) => Promise<T>): Promise<T> {
  return atProfileWindow(world.profilesDir, profileId, world.site.signInUrl, act);
}

/** Collects the `liveview.notice` sentences sent on `client`. */
function noticesOn(client: HostClient): string[] {
  const notices: string[] = [];
  client.onNotification((notification: LiveViewNotification) => {
    if (notification.method === 'liveview.notice') notices.push(notification.params.message);
  });
  return notices;
}

/** Opens a live view of the ceremony on a connection of its own (as the edge does). */
async function openView(world: World, id: string, profileId: string): Promise<{ viewer: HostClient; notices: string[] }> {
  const viewer = await connectHost(world.host.url, TEST_SECRET);
  const notices = noticesOn(viewer);
  await viewer.call('liveview.open', {
    ceremony_id: id,
    profile_id: profileId,
    origin: world.site.siteOrigin,
    generation: 1,
    max_width: 640,
    max_height: 480,
  });
  return { viewer, notices };
}

describe('a sign-in through an identity provider on another origin', () => {
  test('the window follows the sign-in to the provider and back; the ceremony verifies on the site and reports the origins it went through', async () => {
    await withWorld(
      {},
      (site) => ({ egress: { allow: [site.providerOrigin], deny: [] } }),
      async (world) => {
        const { id, answer } = await beginOn(world, 'ada');
        expect(answer.state).toBe('awaiting_person');
        await atWindow(world, 'ada', (page) => signInAtProvider(page, world.site));
        const verified = await stateBecomes(world.client, id, 'verified');
        const claims = await claimsOf(verified);
        expect(claims).toMatchObject({ outcome: 'verified', method: 'differential' });
        expect(claims.visited_origins).toEqual([world.site.siteOrigin, world.site.providerOrigin, world.site.siteOrigin]);
        expect((await deliveredFor(world.receiver, id))[0]?.visited_origins).toEqual(claims.visited_origins);
        expect(world.site.counters()).toMatchObject({ logins: 1, consents: 1, tokenExchanges: 1 });
      },
    );
  });

  test('two hops at the provider (password, then a code) and an account chooser back on the site are one ceremony', async () => {
    await withWorld(
      { twoHop: true, handBack: true },
      (site) => ({ egress: { allow: [site.providerOrigin], deny: [] } }),
      async (world) => {
        const { id } = await beginOn(world, 'ada');
        await atWindow(world, 'ada', async (page) => {
          await signInAtProvider(page, world.site);
          await page.getByRole('button', { name: 'Continue as Ada Lovelace' }).click();
        });
        const claims = await claimsOf(await stateBecomes(world.client, id, 'verified'));
        expect(claims.visited_origins).toEqual([world.site.siteOrigin, world.site.providerOrigin, world.site.siteOrigin]);
        expect(world.site.counters()).toMatchObject({ codesAccepted: 1, chosen: 1, tokenExchanges: 1 });
      },
    );
  });

  test('a provider on a loopback address the operator did not allow is refused, and the live view says why', async () => {
    await withWorld(
      {},
      () => ({}),
      async (world) => {
        const { id } = await beginOn(world, 'ada');
        const { viewer, notices } = await openView(world, id, 'ada');
        try {
          await atWindow(world, 'ada', (page) => page.getByRole('button', { name: 'Sign in with Acme ID' }).click());
          await vi.waitFor(() => expect(notices.join('\n')).toContain(world.site.providerOrigin), { timeout: 15_000, interval: 100 });
          expect(notices[0]).toContain('loopback, private or link-local address');
          expect(notices[0]).toContain('HOST_EGRESS_ALLOW');
          expect(world.site.counters().loginPages).toBe(0);
          expect((await world.client.call('ceremony.status', { ceremony_id: id })).state).toBe('awaiting_person');
          // It ends without a sign-in: the event names no provider the window never reached.
          expect((await world.client.call('ceremony.end', { ceremony_id: id })).ended).toBe(true);
          const claims = await claimsOf(await world.client.call('ceremony.status', { ceremony_id: id }));
          expect(claims.outcome).toBe('ended');
          expect(claims.visited_origins ?? []).not.toContain(world.site.providerOrigin);
        } finally {
          await viewer.close();
        }
      },
    );
  });

  test('with HOST_SIGN_IN_ORIGINS set without the provider, the sign-in is refused and the live view says why', async () => {
    await withWorld(
      {},
      (site) => ({ egress: { allow: [site.providerOrigin], deny: [], signIn: ['https://accounts.example'] } }),
      async (world) => {
        const { id } = await beginOn(world, 'ada');
        const { viewer, notices } = await openView(world, id, 'ada');
        try {
          await atWindow(world, 'ada', (page) => page.getByRole('button', { name: 'Sign in with Acme ID' }).click());
          await vi.waitFor(() => expect(notices.join('\n')).toContain('HOST_SIGN_IN_ORIGINS'), { timeout: 15_000, interval: 100 });
          expect(notices[0]).toContain(world.site.providerOrigin);
          expect(world.site.counters().loginPages).toBe(0);
        } finally {
          await viewer.close();
        }
      },
    );
  });

  test('when the ceremony ends with the window at the provider, the window is taken back to a blank page and nothing of it is reported to the next lease', async () => {
    await withWorld(
      {},
      (site) => ({ egress: { allow: [site.providerOrigin], deny: [] } }),
      async (world) => {
        const { id } = await beginOn(world, 'ada');
        await atWindow(world, 'ada', async (page) => {
          await page.getByRole('button', { name: 'Sign in with Acme ID' }).click();
          await page.getByRole('heading', { name: 'Sign in to Acme ID' }).waitFor();
        });
        expect((await world.client.call('ceremony.end', { ceremony_id: id })).ended).toBe(true);
        const claims = await claimsOf(await world.client.call('ceremony.status', { ceremony_id: id }));
        expect(claims.visited_origins).toEqual([world.site.siteOrigin, world.site.providerOrigin]);
        // The person's window no longer shows the provider's page.
        await vi.waitFor(async () => expect(await profileWindowUrls(world.profilesDir, 'ada')).toEqual(['about:blank']), { timeout: 10_000, interval: 200 });
        // The next lease of the profile starts where nothing of the sign-in is.
        const lease = await vi.waitFor(
          () => world.client.call('lease.acquire', { run_id: 'run_next', profile_id: 'ada', origins: [world.site.siteOrigin], ttl_ms: 60_000 }),
          { timeout: 15_000, interval: 200 },
        );
        const observed = await world.client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 5_000 });
        // An empty page (which the edge turns into page_changed), with nothing the sign-in's pages did.
        expect(observed).toMatchObject({ url: 'about:blank', snapshot: '' });
        expect(observed.blocked).toBeUndefined();
        expect(observed.dialogs).toBeUndefined();
      },
    );
  });

  test('a window the sign-in page opens (the popup pattern) is refused, and the live view says so', async () => {
    const fixtures = await startFixtureServer();
    try {
      await withWorld(
        {},
        (site) => ({ egress: { allow: [site.providerOrigin], deny: [] } }),
        async (world) => {
          const id = ceremonyId();
          const popupTo = encodeURIComponent(world.site.providerOrigin);
          await world.client.call('ceremony.begin', {
            ceremony_id: id,
            profile_id: 'popups',
            origin: fixtures.origin,
            generation: 1,
            sign_in_url: fixtures.url(`confinement/hostile.html?mode=popup&to=${popupTo}`),
            protected_url: fixtures.url('quiet.html'),
            timeout_ms: 60_000,
          });
          // The page opened its window before any view: the view is told on opening.
          const viewer = await connectHost(world.host.url, TEST_SECRET);
          const notices = noticesOn(viewer);
          try {
            await viewer.call('liveview.open', {
              ceremony_id: id,
              profile_id: 'popups',
              origin: fixtures.origin,
              generation: 1,
              max_width: 640,
              max_height: 480,
            });
            await vi.waitFor(() => expect(notices.join('\n')).toContain('tried to open a new window'), { timeout: 15_000, interval: 100 });
            expect(notices.join('\n')).toContain(world.site.providerOrigin);
            expect(world.site.counters().loginPages).toBe(0);
          } finally {
            await viewer.close();
          }
        },
      );
    } finally {
      await fixtures.close();
    }
  });
});
