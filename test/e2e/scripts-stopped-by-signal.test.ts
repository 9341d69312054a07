import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ended, killProcessesUsing, root, signalGroup } from '../../scripts/local-processes.ts';
import { killQuietly } from '../support/process-state.ts';
import { until } from '../support/until.ts';

// A script that started a local stack (`npm run demo`, a benchmark) and is stopped by a signal,
// Ctrl-C or SIGTERM, stops the stack before it exits (scripts/stop-on-signal.ts): before, Node's
// default for the signal ended the script at once and left `wrangler dev`, the host, Chromium
// and Xvfb running, holding their ports.

const FIXTURE = join(root, 'test', 'fixtures', 'signals', 'local-stack-until-signal.ts');
const scratchDirs: string[] = [];
const hostPids: number[] = [];

afterEach(async () => {
  for (const pid of hostPids.splice(0)) signalGroup(pid, 'SIGKILL');
  for (const dir of scratchDirs.splice(0)) {
    // What a script that failed to stop left running (wrangler's workerd names no directory of
    // the stack on its command line, but inherited the script's TMPDIR).
    for (const pid of processesWithEnvironment(`TMPDIR=${dir}`)) if (!signalGroup(pid, 'SIGKILL')) killQuietly(pid);
    await killProcessesUsing(dir);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** The ids of this machine's processes whose environment holds `entry` (NAME=value). */
function processesWithEnvironment(entry: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)
    .filter((name) => {
      try {
        return readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(entry);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Whether something accepts TCP connections at `url`'s host and port. */
function accepts(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('a script that started a local stack', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)('stops the edge and the host on %s, then exits %i', async (signal, code) => {
    const scratch = mkdtempSync(join(tmpdir(), 'stopped-by-signal-'));
    scratchDirs.push(scratch);
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: scratch };
    delete env.VITEST;
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (chunk) => {
      output += String(chunk);
    });
    child.stderr?.on('data', (chunk) => {
      output += String(chunk);
    });
    const [, edgeUrl, hostUrl, hostPid] = await until(
      () => /ready (\S+) (\S+) (\d+)/.exec(output) ?? undefined,
      () => `the stack, in: ${output.slice(-2000)}`,
      180_000,
    );
    hostPids.push(Number(hostPid));
    expect(await accepts(edgeUrl!)).toBe(true);
    expect(await accepts(hostUrl!.replace(/^ws/, 'http'))).toBe(true);

    child.kill(signal);
    await ended(child);
    expect(child.exitCode).toBe(code);
    expect(await accepts(edgeUrl!)).toBe(false);
    expect(await accepts(hostUrl!.replace(/^ws/, 'http'))).toBe(false);
    // The stack's own stop ran (the exit handler alone would only kill the edge's and the host's
    // process groups): it said so, nothing it started runs any more, and its directory is gone.
    expect(output).toContain(`${signal}: stopping what this script started`);
    expect(processesWithEnvironment(`TMPDIR=${scratch}`)).toEqual([]);
    expect(readdirSync(scratch).filter((name) => name.startsWith('governed-browser-'))).toEqual([]);
  });
});
