import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { createConnection } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { AUTH_PROTOCOL } from '../../browser-host/display.ts';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import { type FixtureServer, startFixtureServer } from '../support/fixture-server.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { acquire, TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';

let cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function started(headless: boolean): Promise<{ host: BrowserHost; client: HostClient; fixtures: FixtureServer; profilesDir: string }> {
  const profiles = await temporaryDirectory('host-display-');
  cleanups.push(profiles.remove);
  const fixtures = await startFixtureServer();
  cleanups.push(() => fixtures.close());
  // No DISPLAY in the configuration: a headed host must bring its own.
  const host = await startBrowserHost(testHostConfig(profiles.dir, { headless, display: undefined }));
  cleanups.push(() => host.close());
  const client = await connectHost(host.url, TEST_SECRET);
  cleanups.push(() => client.close());
  return { host, client, fixtures, profilesDir: profiles.dir };
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

/**
 * Opens an X11 connection to display `name` over its Unix socket, presenting `cookie` (or no
 * authorization), and resolves with the server's first reply byte: 1 success, 0 refused.
 */
function x11Setup(name: string, cookie?: Buffer): Promise<number> {
  const pad = (data: Buffer): Buffer => Buffer.concat([data, Buffer.alloc((4 - (data.length % 4)) % 4)]);
  const protocol = cookie === undefined ? Buffer.alloc(0) : Buffer.from(AUTH_PROTOCOL);
  const data = cookie ?? Buffer.alloc(0);
  const header = Buffer.alloc(12);
  header.write('l', 0); // little-endian requests
  header.writeUInt16LE(11, 2);
  header.writeUInt16LE(0, 4);
  header.writeUInt16LE(protocol.length, 6);
  header.writeUInt16LE(data.length, 8);
  return new Promise((resolve, reject) => {
    const socket = createConnection(`/tmp/.X11-unix/X${name.slice(1)}`);
    socket.once('error', reject);
    socket.once('data', (reply) => {
      socket.destroy();
      resolve(reply[0] ?? -1);
    });
    socket.write(Buffer.concat([header, pad(protocol), pad(data)]));
  });
}

/** The cookie of an authority file written by `authorityEntry` (its last 16 bytes). */
async function cookieOf(file: string): Promise<Buffer> {
  const entry = await readFile(file);
  return entry.subarray(entry.length - 16);
}

/** The environment variable names of the Chromium whose command line names `userDataDir`. */
async function chromiumEnvironmentNames(userDataDir: string): Promise<string[]> {
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const commandLine = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!commandLine.includes(`--user-data-dir=${userDataDir}`) || commandLine.includes('--type=')) continue;
    const environment = await readFile(`/proc/${pid}/environ`, 'utf8');
    return environment
      .split('\0')
      .filter((entry) => entry !== '')
      .map((entry) => entry.slice(0, entry.indexOf('=')));
  }
  throw new Error(`no Chromium with --user-data-dir=${userDataDir}`);
}

describe("the host's display and Chromium's environment", () => {
  test('only a client holding the authority file can connect to the display; the file is readable by the host alone', async () => {
    const { host } = await started(false);
    const display = host.display!;
    expect((await stat(display.authority)).mode & 0o077).toBe(0);
    expect(await x11Setup(display.name)).toBe(0);
    expect(await x11Setup(display.name, randomBytes(16))).toBe(0);
    expect(await x11Setup(display.name, await cookieOf(display.authority))).toBe(1);
    const authority = display.authority;
    await host.close();
    expect(existsSync(authority)).toBe(false);
  });

  test("Chromium gets an allowlisted environment, never the host's secrets or tokens", async () => {
    process.env.AGENT_TOKEN = 'agent-token-that-must-not-reach-chromium';
    try {
      const { client, fixtures, profilesDir } = await started(false);
      await userAgentSeenBy(client, fixtures);
      const names = await chromiumEnvironmentNames(path.join(profilesDir, 'display'));
      // Debian's launcher script adds its own (CHROME_WRAPPER and such) and its shell's PWD; none may come from the host.
      const inherited = names.filter((name) => name in process.env && !/^(PWD|SHLVL|_|HOME|DISPLAY|XAUTHORITY|LANG|LANGUAGE|LC_[A-Z]+|TZ)$/.test(name));
      expect(inherited).toEqual([]);
      expect(names).not.toContain('AGENT_TOKEN');
      expect(names).toContain('XAUTHORITY');
    } finally {
      delete process.env.AGENT_TOKEN;
    }
  });
});
