import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ended, root, signalGroup } from '../../../scripts/local-processes.ts';
import { processStateOf } from '../../support/process-state.ts';
import { until } from '../../support/until.ts';

// scripts/stop-on-signal.ts: a script stopped by a signal stops what it started in process
// groups of its own before it exits, as the signal would have ended it (128 + its number).

const FIXTURE = join(root, 'test', 'fixtures', 'signals', 'stops-on-signal.ts');
const started: { child: ChildProcess; groupLeader?: number }[] = [];

afterEach(() => {
  for (const { child, groupLeader } of started.splice(0)) {
    child.kill('SIGKILL');
    signalGroup(groupLeader, 'SIGKILL');
  }
});

/** Starts the fixture script (outside vitest's environment); resolves once it printed `ready <pid>`. */
async function startScript(mode?: string): Promise<{ child: ChildProcess; output: () => string; sleeper: number }> {
  const env = { ...process.env };
  delete env.VITEST;
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, ...(mode ? [mode] : [])], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const entry: { child: ChildProcess; groupLeader?: number } = { child };
  started.push(entry);
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += String(chunk);
  });
  child.stderr?.on('data', (chunk) => {
    output += String(chunk);
  });
  const sleeper = await until(
    () => Number(/ready (\d+)/.exec(output)?.[1]) || undefined,
    () => `ready in: ${output}`,
    30_000,
  );
  entry.groupLeader = sleeper;
  return { child, output: () => output, sleeper };
}

/** Whether process `pid` is running (a zombie, ended but not yet reaped, is not). */
function isRunning(pid: number): boolean {
  const state = processStateOf(pid);
  return state !== undefined && state !== 'Z';
}

/** Resolves to the exit code once the process has ended. */
async function exitCodeOf(child: ChildProcess): Promise<number | null> {
  await ended(child);
  return child.exitCode;
}

describe('a script stopped by a signal (scripts/stop-on-signal.ts)', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
    ['SIGHUP', 129],
  ] as const)('on %s stops the process group it started, then exits %i', async (signal, code) => {
    const { child, output, sleeper } = await startScript();
    child.kill(signal);
    expect(await exitCodeOf(child)).toBe(code);
    expect(output()).toContain('stopped');
    expect(isRunning(sleeper)).toBe(false);
  });

  it('takes copies of the signal within a second for the same stop, and exits at once on one a second or more later', async () => {
    const { child, output } = await startScript('hangs');
    child.kill('SIGINT');
    await until(() => output().includes('stopping'), 'stopping', 10_000);
    const first = performance.now();
    // As Ctrl-C reaches it: from the terminal, and relayed by npm and scripts/toolchain.mjs
    // (sent apart, so that the kernel cannot merge them into one pending signal).
    for (const _copy of [1, 2]) {
      await new Promise((resolve) => setTimeout(resolve, 150));
      child.kill('SIGINT');
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(child.exitCode).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1_100 - (performance.now() - first))));
    child.kill('SIGTERM');
    expect(await exitCodeOf(child)).toBe(143);
    expect(output()).not.toContain('stopped');
    expect(output().match(/^stopping$/gm)).toHaveLength(1);
  });

  it("stops, whatever other listeners the signal has (Playwright's for a browser in the script)", async () => {
    const { child, output, sleeper } = await startScript('other-listener');
    child.kill('SIGTERM');
    expect(await exitCodeOf(child)).toBe(143);
    expect(output()).toContain('other listener');
    expect(output()).toContain('stopped');
    expect(isRunning(sleeper)).toBe(false);
  });
});
