import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ConfigError, parseHostConfig } from '../../browser-host/config.ts';

const SECRET = 'x'.repeat(32);

describe('host configuration', () => {
  test('defaults: port 8790 on loopback, headed, three browsers, 5 s admission wait, .profiles under cwd', () => {
    const config = parseHostConfig({ HOST_SHARED_SECRET: SECRET }, [], '/srv/host');
    expect(config).toMatchObject({
      port: 8790,
      bind: '127.0.0.1',
      hostId: 'host-1',
      chromiumPath: '/usr/bin/chromium',
      headless: false,
      display: undefined,
      profilesDir: path.resolve('/srv/host', '.profiles'),
      maxBrowsers: 3,
      admissionWaitMs: 5_000,
      window: { maxNodes: 400, maxBytes: 32 * 1024 },
      settle: { budgetMs: 2_000, quietMs: 300, maxTrackedRequests: 256 },
    });
  });

  test('sign-in origins: any public origin by default; HOST_SIGN_IN_ORIGINS lists them, and a bad entry is a ConfigError naming it', () => {
    expect(parseHostConfig({ HOST_SHARED_SECRET: SECRET }).egress.signIn).toBeUndefined();
    expect(
      parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SIGN_IN_ORIGINS: 'https://Accounts.Google.com, https://login.microsoftonline.com' }).egress.signIn,
    ).toEqual(['https://accounts.google.com', 'https://login.microsoftonline.com']);
    expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SIGN_IN_ORIGINS: 'https://accounts.google.com/o/oauth2' })).toThrow(ConfigError);
    expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SIGN_IN_ORIGINS: 'ftp://idp.example' })).toThrow(/HOST_SIGN_IN_ORIGINS/);
  });

  test("fleet settings: snapshots every 3 minutes of a hold, drains for at most 2 minutes, reports package.json's version unless HOST_VERSION says otherwise", async () => {
    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
    expect(parseHostConfig({ HOST_SHARED_SECRET: SECRET })).toMatchObject({ snapshotIntervalMs: 180_000, drainTimeoutMs: 120_000, version });
    expect(
      parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SNAPSHOT_INTERVAL_MS: '5000', HOST_DRAIN_TIMEOUT_MS: '0', HOST_VERSION: '2026.12.6-rc1' }),
    ).toMatchObject({ snapshotIntervalMs: 5_000, drainTimeoutMs: 0, version: '2026.12.6-rc1' });
    expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SNAPSHOT_INTERVAL_MS: '999' })).toThrow(/HOST_SNAPSHOT_INTERVAL_MS/);
    expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_DRAIN_TIMEOUT_MS: 'soon' })).toThrow(/HOST_DRAIN_TIMEOUT_MS/);
  });

  test('headless by HOST_HEADLESS=1 or by --headless; port 0 means any free port', () => {
    expect(parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_HEADLESS: '1' }).headless).toBe(true);
    expect(parseHostConfig({ HOST_SHARED_SECRET: SECRET }, ['--headless']).headless).toBe(true);
    expect(parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_PORT: '0' }).port).toBe(0);
  });

  test('a missing or short secret, a bad number or an unknown flag is a ConfigError naming it', () => {
    expect(() => parseHostConfig({})).toThrow(/HOST_SHARED_SECRET/);
    expect(() => parseHostConfig({ HOST_SHARED_SECRET: 'short' })).toThrow(/HOST_SHARED_SECRET must be at least 32 bytes/);
    expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_MAX_BROWSERS: 'three' })).toThrow(/HOST_MAX_BROWSERS/);
    expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_PORT: '70000' })).toThrow(/HOST_PORT/);
    expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_HEADLESS: 'yes' })).toThrow(/HOST_HEADLESS/);
    expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET }, ['--verbose'])).toThrow(ConfigError);
  });

  test('fewer than three browsers is refused: a sign-in ceremony holds one and its verification reserves two more', () => {
    // With two browsers, every ceremony would starve its own verification forever.
    for (const few of ['1', '2']) expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_MAX_BROWSERS: few })).toThrow(/HOST_MAX_BROWSERS/);
    expect(parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_MAX_BROWSERS: '3' }).maxBrowsers).toBe(3);
  });

  test("the scripted person's DevTools port is a test-only setting: refused in production", () => {
    expect(parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_PERSON_DEBUGGING: '1' }).personDebugging).toBe(true);
    expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_PERSON_DEBUGGING: '1', NODE_ENV: 'production' })).toThrow(ConfigError);
    expect(parseHostConfig({ HOST_SHARED_SECRET: SECRET, NODE_ENV: 'production' }).personDebugging).toBe(false);
  });
});
