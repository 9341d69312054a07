import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'vitest';
import {
  DEFAULT_ACTIONABILITY_MS,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_SETTLE_CONFIG,
  DEFAULT_SNAPSHOT_INTERVAL_MS,
  DEFAULT_WINDOW_CAPS,
  type HostConfig,
} from '../../browser-host/config.ts';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import { DEFAULT_SCREENSHOT_CONFIG } from '../../browser-host/screenshots.ts';
import type { LeaseGrant } from '../../shared/protocol.ts';
import { type FixtureServer, fixtureOrigins, startFixtureServer } from './fixture-server.ts';
import { connectHost, type HostClient } from './host-client.ts';

/** The secret tests share between the host and the edge stand-in (>= 32 bytes). */
export const TEST_SECRET = 'test-shared-secret-of-at-least-32-bytes!!';

/**
 * A host configuration for tests: headless, any free port on loopback, a fresh temporary profiles
 * directory, the production numbers unless `overrides` say otherwise.
 */
export function testHostConfig(profilesDir: string, overrides: Partial<HostConfig> = {}): HostConfig {
  return {
    port: 0,
    bind: '127.0.0.1',
    sharedSecret: TEST_SECRET,
    hostId: 'host-test',
    chromiumPath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    display: undefined,
    profilesDir,
    maxBrowsers: 3,
    admissionWaitMs: 5_000,
    admissionQueueMax: 64,
    launchTimeoutMs: 30_000,
    window: DEFAULT_WINDOW_CAPS,
    settle: DEFAULT_SETTLE_CONFIG,
    siteDefinitions: [],
    signInWords: undefined,
    edgeUrl: undefined,
    version: 'test',
    snapshotIntervalMs: DEFAULT_SNAPSHOT_INTERVAL_MS,
    drainTimeoutMs: DEFAULT_DRAIN_TIMEOUT_MS,
    personDebugging: false,
    ceremonyPollMs: 1_000,
    egress: { allow: [], deny: [] },
    actionabilityMs: DEFAULT_ACTIONABILITY_MS,
    screenshots: DEFAULT_SCREENSHOT_CONFIG,
    ...overrides,
  };
}

/** A fresh temporary directory, removed by the returned cleanup. */
export async function temporaryDirectory(prefix: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Leases a profile with a one-minute TTL (no admission wait beyond the host default) for a run
 * whose origins are `origins`: by default those of the fixture servers this file started (or a
 * placeholder when it started none, for tests that never load a page).
 */
export function acquire(client: HostClient, profileId: string, ttlMs = 60_000, waitMs?: number, origins = fixtureOrigins()): Promise<LeaseGrant> {
  return client.call('lease.acquire', {
    run_id: `run-${profileId}`,
    profile_id: profileId,
    origins: origins.length > 0 ? origins : ['http://127.0.0.1:9'],
    ttl_ms: ttlMs,
    ...(waitMs === undefined ? {} : { wait_ms: waitMs }),
  });
}

/**
 * The host-test API: `test` with
 * - `fixtures` (file): the fixture web server;
 * - `profilesDir` (file): the host's profiles directory, fresh, removed after the file;
 * - `host` (file): a browser host started in-process with `overrides`, closed (browsers and all)
 *   after the file;
 * - `client` (test): a verified wire client, closed after the test;
 * - `lease` (test): a lease on the file's main profile, released after the test, so tests in a
 *   file reuse one open browser.
 */
export function hostTest(overrides: Partial<HostConfig> = {}) {
  return test
    .extend('fixtures', { scope: 'file' }, async ({}, { onCleanup }): Promise<FixtureServer> => {
      const server = await startFixtureServer();
      onCleanup(() => server.close());
      return server;
    })
    .extend('profilesDir', { scope: 'file' }, async ({}, { onCleanup }): Promise<string> => {
      const profiles = await temporaryDirectory('host-profiles-');
      onCleanup(() => profiles.remove());
      return profiles.dir;
    })
    .extend('host', { scope: 'file' }, async ({ profilesDir }, { onCleanup }): Promise<BrowserHost> => {
      const host = await startBrowserHost(testHostConfig(profilesDir, overrides));
      onCleanup(() => host.close());
      return host;
    })
    .extend('client', async ({ host }, { onCleanup }): Promise<HostClient> => {
      const client = await connectHost(host.url, TEST_SECRET);
      onCleanup(() => client.close());
      return client;
    })
    .extend('lease', async ({ client, fixtures }, { onCleanup }): Promise<LeaseGrant> => {
      const lease = await acquire(client, 'main', 60_000, undefined, [fixtures.origin, ...fixtureOrigins()]);
      onCleanup(async () => {
        if (client.open) await client.call('lease.release', { lease_id: lease.lease_id });
      });
      return lease;
    });
}
