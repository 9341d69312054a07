import type { Page } from 'playwright-core';
import { describe, expect, test } from 'vitest';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import { ceremonyId, claimsOf } from '../support/ceremony-fixture.ts';
import { type FixtureServer, startFixtureServer } from '../support/fixture-server.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';
import { atProfileWindow } from '../support/person-window.ts';

// What the host reports as the origins the person's sign-in window visited.

interface World {
  readonly site: FixtureServer;
  readonly host: BrowserHost;
  readonly client: HostClient;
  readonly profilesDir: string;
}

async function withWorld(use: (world: World) => Promise<void>): Promise<void> {
  const site = await startFixtureServer();
  const profiles = await temporaryDirectory('visited-');
  const host = await startBrowserHost(testHostConfig(profiles.dir, { personDebugging: true, ceremonyPollMs: 200 }));
  const client = await connectHost(host.url, TEST_SECRET);
  try {
    await use({ site, host, client, profilesDir: profiles.dir });
  } finally {
    await client.close();
    await host.close();
    await site.close();
    await profiles.remove();
  }
}

async function begin(world: World, profileId: string): Promise<string> {
  const id = ceremonyId();
  const answer = await world.client.call('ceremony.begin', {
    ceremony_id: id,
    profile_id: profileId,
    origin: world.site.origin,
    generation: 1,
    sign_in_url: world.site.url('quiet.html'),
    protected_url: world.site.url('button.html'),
    timeout_ms: 120_000,
  });
  expect(answer.state).toBe('awaiting_person');
  return id;
}

/** Acts as the person at the profile's window, on the page showing the site. */
function atWindow<T>(world: World, profileId: string, act: (page: Page) => Promise<T>): Promise<T> {
  return atProfileWindow(world.profilesDir, profileId, world.site.origin, act);
}

describe('visited origins', () => {
  test('an origin the window never reached (its name does not resolve) is not reported as visited', async () => {
    await withWorld(async (world) => {
      const id = await begin(world, 'typo');
      await atWindow(world, 'typo', async (page) => {
        await page.goto('http://accounts.nowhere.invalid/login', { timeout: 15_000 }).catch(() => {});
        await page.goto(world.site.url('quiet.html'), { timeout: 15_000 });
      });
      expect((await world.client.call('ceremony.end', { ceremony_id: id })).ended).toBe(true);
      const claims = await claimsOf(await world.client.call('ceremony.status', { ceremony_id: id }));
      // Before the fix: [site, 'http://accounts.nowhere.invalid', site].
      expect(claims.visited_origins ?? []).not.toContain('http://accounts.nowhere.invalid');
    });
  });

  test('a window that went through 32 long-named origins still gets a ceremony outcome the edge can take', async () => {
    await withWorld(async (world) => {
      const id = await begin(world, 'long-names');
      await atWindow(world, 'long-names', async (page) => {
        // 30 hops through origins of about 90 characters (a redirect chain through a provider's
        // tenant-named hosts would do the same), then back to the site.
        for (let hop = 0; hop < 30; hop += 1) {
          const host = `${'tenant-'.padEnd(60, 'x')}.hop${String(hop).padStart(2, '0')}.sso-provider.invalid`;
          await page.goto(`http://${host}/authorize`, { timeout: 15_000 }).catch(() => {});
        }
        await page.goto(world.site.url('quiet.html'), { timeout: 15_000 });
      });
      expect((await world.client.call('ceremony.end', { ceremony_id: id })).ended).toBe(true);
      // Before the fix: internal_error "ceremony.status produced an invalid result: event: Too big" (the
      // signed event is longer than the 4,096 characters the wire and the edge's callback take), so
      // the outcome can neither be asked for nor delivered.
      const status = await world.client.request('ceremony.status', { ceremony_id: id });
      expect(status).not.toHaveProperty('error');
    });
  });
});
