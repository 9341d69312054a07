import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/local-stack.ts';
import { TEST_SECRET } from '../support/host-fixture.ts';

// What the container image runs, run here the same way: the host's entry and its health probe on
// plain Node (its own type stripping, no tsx, as in the image where only production dependencies
// are installed), headed under the Xvfb the host starts, and SIGTERM (the image's STOPSIGNAL).

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const execFileAsync = promisify(execFile);
/** The environment of the test run without anything that would load tsx or reuse a display. */
const { NODE_OPTIONS: _options, DISPLAY: _display, ...plainEnv } = process.env;

/** Runs the image's probe command, `node browser-host/hello-probe.ts`, against `port`; resolves with its exit code and output. */
async function probe(port: number, timeoutMs = 5_000): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await execFileAsync(process.execPath, ['browser-host/hello-probe.ts'], {
      cwd: root,
      env: { ...plainEnv, HOST_PORT: String(port), HOST_PROBE_TIMEOUT_MS: String(timeoutMs) },
    });
    return { code: 0, output: stdout };
  } catch (error) {
    const failed = error as { code?: number; stderr?: string };
    return { code: failed.code ?? -1, output: failed.stderr ?? '' };
  }
}

describe("the host image's command and probe, on plain Node", () => {
  let host: ChildProcess;
  let port: number;
  let profilesDir: string;
  const output: string[] = [];

  beforeAll(async () => {
    profilesDir = await mkdtemp(join(tmpdir(), 'container-runtime-'));
    port = await freePort();
    host = spawn(process.execPath, ['browser-host/main.ts'], {
      cwd: root,
      env: {
        ...plainEnv,
        HOST_PORT: String(port),
        HOST_ID: 'browser-host-0',
        HOST_SHARED_SECRET: TEST_SECRET,
        HOST_PROFILES_DIR: profilesDir,
        NODE_ENV: 'production',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, with the Xvfb and Chromiums it starts
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the host did not start:\n${output.join('')}`)), 30_000);
      host.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
      host.stdout?.on('data', (chunk: Buffer) => {
        output.push(chunk.toString());
        if (output.join('').includes('browser-host listening on')) {
          clearTimeout(timer);
          resolve();
        }
      });
      host.once('exit', (code) => reject(new Error(`the host exited (${code}) before listening:\n${output.join('')}`)));
    });
  });

  afterAll(async () => {
    try {
      process.kill(-host.pid!, 'SIGKILL'); // whatever is left of the group after a failed test
    } catch {
      // gone, as after the SIGTERM test
    }
    await rm(profilesDir, { recursive: true, force: true });
  });

  it('the entry starts without tsx and listens where HOST_PORT says', () => {
    expect(output.join('')).toContain(`browser-host listening on ws://127.0.0.1:${port}`);
  });

  it("the probe exits 0 on the host's signed hello, naming the host", async () => {
    expect(await probe(port)).toEqual({ code: 0, output: `browser-host browser-host-0 answered on port ${port}\n` });
  });

  it('the probe exits 1 while the host is stopped (the port still accepts), and 0 once it runs again', async () => {
    host.kill('SIGSTOP');
    try {
      const stopped = await probe(port, 1_500);
      expect(stopped.code).toBe(1);
      expect(stopped.output).toContain('no hello within 1500 ms');
    } finally {
      host.kill('SIGCONT');
    }
    expect((await probe(port)).code).toBe(0);
  });

  it('the probe exits 1 at once when nothing listens', async () => {
    const closed = await probe(await freePort());
    expect(closed.code).toBe(1);
    expect(closed.output).toContain('ECONNREFUSED');
  });

  it('SIGTERM, the image stop signal, ends the host with exit code 0', async () => {
    const exited = new Promise<number | null>((resolve) => host.once('exit', (code) => resolve(code)));
    host.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
