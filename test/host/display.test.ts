import { afterEach, describe, expect, test } from 'vitest';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import { type FixtureServer, startFixtureServer } from '../support/fixture-server.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { acquire, TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';

let cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function started(headless: boolean): Promise<{ host: BrowserHost; client: HostClient; fixtures: FixtureServer }> {
  const profiles = await temporaryDirectory('host-display-');
  cleanups.push(profiles.remove);
  const fixtures = await startFixtureServer();
  cleanups.push(() => fixtures.close());
  // No DISPLAY in the configuration: a headed host must bring its own.
  const host = await startBrowserHost(testHostConfig(profiles.dir, { headless, display: undefined }));
  cleanups.push(() => host.close());
  const client = await connectHost(host.url, TEST_SECRET);
  cleanups.push(() => client.close());
  return { host, client, fixtures };
}

/** The user agent as the page itself sees it, read from an observation. */
async function userAgentSeenBy(client: HostClient, fixtures: FixtureServer): Promise<string> {
  const lease = await acquire(client, 'display');
  const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('user-agent.html'), timeout_ms: 30_000 });
  return /UA: (.*)$/m.exec(page.snapshot)?.[1] ?? '';
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('display', () => {
  test('without a DISPLAY a headed host starts Xvfb, runs real headed Chromium on it and stops it on close', async () => {
    const { host, client, fixtures } = await started(false);
    expect(host.display?.name).toMatch(/^:\d+$/);
    const pid = host.display?.pid ?? -1;
    expect(isRunning(pid)).toBe(true);
    expect(await client.call('host.status', {})).toMatchObject({ headless: false });

    const userAgent = await userAgentSeenBy(client, fixtures);
    expect(userAgent).toContain('Chrome/');
    expect(userAgent).not.toContain('HeadlessChrome');

    await host.close();
    expect(isRunning(pid)).toBe(false);
  });

  test('a headless host starts no display and its Chromium is headless', async () => {
    const { host, client, fixtures } = await started(true);
    expect(host.display).toBeUndefined();
    expect(await userAgentSeenBy(client, fixtures)).toContain('HeadlessChrome');
  });
});
