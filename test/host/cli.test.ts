import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { signalGroup } from '../../scripts/local-processes.ts';
import { connectHost } from '../support/host-client.ts';
import { TEST_SECRET, temporaryDirectory } from '../support/host-fixture.ts';
import { killQuietly, processStateOf } from '../support/process-state.ts';

let running: ChildProcess | undefined;

afterEach(async () => {
  const npm = running;
  running = undefined;
  if (npm?.pid === undefined) return;
  // npm's process alone would leave its script, the host and its browsers running: every process
  // of the tree (Chromium has a group of its own), then the group (a host whose parent already
  // ended is no longer in the tree, but still in npm's group).
  for (const { pid } of descendantsOf(npm.pid)) killQuietly(pid);
  signalGroup(npm.pid, 'SIGKILL');
  if (npm.exitCode === null && npm.signalCode === null) await once(npm, 'exit');
});

/**
 * Runs `npm run -s host -- ...args`, what an operator starts and signals, with exactly `env` (plus
 * PATH and HOME), collecting its output. npm leads a process group of its own (its pid is the
 * group's id), as a service manager's unit would.
 */
function runHost(env: Record<string, string>, args: string[] = []) {
  const child = spawn('npm', ['run', '-s', 'host', '--', ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  running = child;
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', () => {
      const match = /^browser-host listening on (ws:\/\/127\.0\.0\.1:\d+)\n/.exec(stdout);
      if (match?.[1]) resolve(match[1]);
    });
    void exited.then((code) => reject(new Error(`exited ${code} before listening: ${stderr}`)));
  });
  listening.catch(() => {}); // a test that expects an early exit never awaits it

  return { child, listening, exited, output: () => ({ stdout, stderr }) };
}

/** Every process now running under `root` (pid), at any depth (1 for a child), with its command name, read from /proc. */
function descendantsOf(root: number): { pid: number; command: string; depth: number }[] {
  const table = new Map<number, { parent: number; command: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      table.set(Number(entry), { command: stat.slice(stat.indexOf('(') + 1, close), parent: Number(stat.slice(close + 2).split(' ')[1]) });
    } catch {
      // the process ended while the table was read
    }
  }
  const found: { pid: number; command: string; depth: number }[] = [];
  for (const [pid, { command, parent }] of table) {
    let at = parent;
    let depth = 1;
    while (at !== root && at > 1 && depth < 64) {
      at = table.get(at)?.parent ?? 0;
      depth++;
    }
    if (at === root) found.push({ pid, command, depth });
  }
  return found;
}

/** Whether `signal` waits, undelivered, at process `pid` (a stopped process keeps it pending), from /proc/<pid>/status. */
function isPending(pid: number, signal: 'SIGTERM'): boolean {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const bit = 1n << BigInt(constants.signals[signal] - 1);
  for (const field of ['SigPnd', 'ShdPnd']) {
    const mask = new RegExp(`^${field}:\\s*([0-9a-f]+)$`, 'm').exec(status)?.[1];
    if (mask !== undefined && (BigInt(`0x${mask}`) & bit) !== 0n) return true;
  }
  return false;
}

/** The host's own process under the launcher `root` (pid): the deepest Node process of its tree (npm, the toolchain and the host are all Node; Chromium is not). */
function hostProcessOf(root: number): number {
  const nodes = descendantsOf(root).filter((process) => process.command === 'node');
  return nodes.sort((a, b) => b.depth - a.depth)[0]?.pid ?? root;
}

/**
 * Starts a headless host with `npm run host` (its drain bounded by `drainTimeoutMs` ms), connects
 * to it and takes one lease, runs `body` with them, then removes the profiles directory.
 */
async function withLeasedHost(
  drainTimeoutMs: number,
  body: (started: { host: ReturnType<typeof runHost>; client: Awaited<ReturnType<typeof connectHost>>; leaseId: string }) => Promise<void>,
): Promise<void> {
  const profiles = await temporaryDirectory('host-cli-');
  try {
    const host = runHost({ HOST_SHARED_SECRET: TEST_SECRET, HOST_PORT: '0', HOST_PROFILES_DIR: profiles.dir, HOST_DRAIN_TIMEOUT_MS: String(drainTimeoutMs) }, [
      '--headless',
    ]);
    const client = await connectHost(await host.listening, TEST_SECRET);
    const lease = await client.call('lease.acquire', { run_id: 'r1', profile_id: 'p1', origins: ['http://127.0.0.1:9'], ttl_ms: 60_000 });
    await body({ host, client, leaseId: lease.lease_id });
  } finally {
    await profiles.remove();
  }
}

/** Waits (at most 10 s) until the host reports draining with its one lease still live. */
async function untilDraining(client: Awaited<ReturnType<typeof connectHost>>): Promise<void> {
  await vi.waitFor(async () => expect(await client.call('host.status', {})).toMatchObject({ draining: true, leases: 1 }), { timeout: 10_000 });
}

describe('the browser-host CLI', () => {
  test('prints one listening line, serves the wire, and exits 0 on SIGTERM (headed, its own Xvfb)', async () => {
    const profiles = await temporaryDirectory('host-cli-');
    try {
      const host = runHost({ HOST_SHARED_SECRET: TEST_SECRET, HOST_PORT: '0', HOST_PROFILES_DIR: profiles.dir });
      const url = await host.listening;
      const client = await connectHost(url, TEST_SECRET);
      expect(await client.call('host.status', {})).toMatchObject({ host_id: 'host-1', headless: false, max_browsers: 3 });
      await client.close();
      host.child.kill('SIGTERM');
      expect(await host.exited).toBe(0);
      expect(host.output().stdout).toBe(`browser-host listening on ${url}\n`);
    } finally {
      await profiles.remove();
    }
  });

  test('--headless starts a headless host, and SIGINT stops it with exit code 0', async () => {
    const profiles = await temporaryDirectory('host-cli-');
    try {
      const host = runHost({ HOST_SHARED_SECRET: TEST_SECRET, HOST_PORT: '0', HOST_PROFILES_DIR: profiles.dir }, ['--headless']);
      const client = await connectHost(await host.listening, TEST_SECRET);
      expect(await client.call('host.status', {})).toMatchObject({ headless: true });
      await client.close();
      host.child.kill('SIGINT');
      expect(await host.exited).toBe(0);
    } finally {
      await profiles.remove();
    }
  });

  test('SIGTERM drains first: new leases are refused host_draining, the live lease finishes, then the host exits 0', async () => {
    await withLeasedHost(60_000, async ({ host, client, leaseId }) => {
      host.child.kill('SIGTERM');
      await untilDraining(client);
      // The signal is the host's to handle: its browser is not closed behind the drain's back.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await client.call('host.status', {})).toMatchObject({ draining: true, leases: 1, browsers: 1 });
      const refused = await client.request('lease.acquire', { run_id: 'r2', profile_id: 'p2', origins: ['http://127.0.0.1:9'], ttl_ms: 60_000 });
      expect(refused).toMatchObject({ error: { code: 'host_draining' } });
      expect(host.child.exitCode).toBeNull();
      await client.call('lease.release', { lease_id: leaseId });
      expect(await host.exited).toBe(0);
      expect(host.output().stderr).toContain('browser-host: draining (at most 60000 ms) before stopping');
    });
  });

  test('a host busy when SIGTERM reaches the command that started it still drains: the signal is relayed and nothing kills the host', async () => {
    await withLeasedHost(60_000, async ({ host, client, leaseId }) => {
      const hostPid = hostProcessOf(host.child.pid ?? 0);
      expect(hostPid).not.toBe(host.child.pid);
      // A host whose event loop is held (a long synchronous step, a loaded machine) when the signal
      // comes: stopped until the SIGTERM has reached it, and 200 ms more (the tsx command killed a
      // child that had not answered in 2 x 30 ms).
      process.kill(hostPid, 'SIGSTOP');
      let hostLived = true;
      try {
        // Stopped before the SIGTERM is sent: a process not yet stopped when both arrive takes the
        // SIGTERM first (the lower number), into Node's own signal handler, and never shows it pending.
        await vi.waitFor(() => expect(processStateOf(hostPid)).toBe('T'), { timeout: 10_000, interval: 20 });
        host.child.kill('SIGTERM');
        await vi.waitFor(() => expect(isPending(hostPid, 'SIGTERM')).toBe(true), { timeout: 10_000, interval: 20 });
        await new Promise((resolve) => setTimeout(resolve, 200));
      } finally {
        try {
          process.kill(hostPid, 'SIGCONT');
        } catch {
          hostLived = false;
        }
      }
      expect(hostLived, 'the host process was killed while its loop was held').toBe(true);
      await vi.waitFor(async () => expect(await client.call('host.status', {})).toMatchObject({ draining: true, leases: 1, browsers: 1 }), {
        timeout: 10_000,
      });
      await client.call('lease.release', { lease_id: leaseId });
      expect(await host.exited).toBe(0);
    });
  });

  test('SIGTERM to the whole process group (a service manager stopping the unit) drains once: the copy its launcher relays does not force the close', async () => {
    await withLeasedHost(60_000, async ({ host, client, leaseId }) => {
      process.kill(-(host.child.pid ?? 0), 'SIGTERM');
      await untilDraining(client);
      // Every copy has arrived by now (npm and the launcher relay at once); the lease still stands.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await client.call('host.status', {})).toMatchObject({ draining: true, leases: 1, browsers: 1 });
      await client.call('lease.release', { lease_id: leaseId });
      expect(await host.exited).toBe(0);
      expect(host.output().stderr).not.toContain('stopping anyway');
    });
  });

  test('a second SIGTERM a second or more after the first closes at once, the live lease with it', async () => {
    await withLeasedHost(600_000, async ({ host, client }) => {
      host.child.kill('SIGTERM');
      await untilDraining(client);
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      host.child.kill('SIGTERM');
      expect(await host.exited).toBe(0);
      expect(host.output().stderr).not.toContain('not drained');
    });
  });

  test('invalid configuration is a clear message and exit code 1', async () => {
    const host = runHost({ HOST_SHARED_SECRET: 'too-short' });
    expect(await host.exited).toBe(1);
    expect(host.output().stderr).toContain('HOST_SHARED_SECRET must be at least 32 bytes');
    expect(host.output().stdout).toBe('');
  });
});
