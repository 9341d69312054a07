import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { connectHost } from '../support/host-client.ts';
import { TEST_SECRET, temporaryDirectory } from '../support/host-fixture.ts';

const TSX = 'node_modules/.bin/tsx';
let running: ChildProcess | undefined;

afterEach(async () => {
  if (running && running.exitCode === null && running.signalCode === null) {
    running.kill('SIGKILL');
    await once(running, 'exit');
  }
  running = undefined;
});

/** Runs `tsx browser-host/main.ts` with exactly `env` (plus PATH), collecting its output. */
function runHost(env: Record<string, string>, args: string[] = []) {
  const child = spawn(TSX, ['browser-host/main.ts', ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
    const profiles = await temporaryDirectory('host-cli-');
    try {
      const host = runHost({ HOST_SHARED_SECRET: TEST_SECRET, HOST_PORT: '0', HOST_PROFILES_DIR: profiles.dir, HOST_DRAIN_TIMEOUT_MS: '60000' }, [
        '--headless',
      ]);
      const client = await connectHost(await host.listening, TEST_SECRET);
      const lease = await client.call('lease.acquire', { run_id: 'r1', profile_id: 'p1', origins: ['http://127.0.0.1:9'], ttl_ms: 60_000 });
      host.child.kill('SIGTERM');
      await vi.waitFor(async () => expect(await client.call('host.status', {})).toMatchObject({ draining: true, leases: 1 }), { timeout: 10_000 });
      // The signal is the host's to handle: its browser is not closed behind the drain's back.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await client.call('host.status', {})).toMatchObject({ draining: true, leases: 1, browsers: 1 });
      const refused = await client.request('lease.acquire', { run_id: 'r2', profile_id: 'p2', origins: ['http://127.0.0.1:9'], ttl_ms: 60_000 });
      expect(refused).toMatchObject({ error: { code: 'host_draining' } });
      expect(host.child.exitCode).toBeNull();
      await client.call('lease.release', { lease_id: lease.lease_id });
      expect(await host.exited).toBe(0);
      expect(host.output().stderr).toContain('browser-host: draining (at most 60000 ms) before stopping');
    } finally {
      await profiles.remove();
    }
  });

  test('invalid configuration is a clear message and exit code 1', async () => {
    const host = runHost({ HOST_SHARED_SECRET: 'too-short' });
    expect(await host.exited).toBe(1);
    expect(host.output().stderr).toContain('HOST_SHARED_SECRET must be at least 32 bytes');
    expect(host.output().stdout).toBe('');
  });
});
