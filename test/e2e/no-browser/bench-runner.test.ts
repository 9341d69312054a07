import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ended, root, signalGroup } from '../../../scripts/local-processes.ts';
import { until } from '../../support/until.ts';

// scripts/bench.mjs (what `npm run bench` runs) in a scratch root whose benchmarks are
// stand-ins: each prints its name; `BENCH_FAILS` names one that exits 3, `BENCH_WAITS` one that
// runs until SIGTERM and then exits as a stopped stack script does (143).

/** Every benchmark, in the runner's order, as it names them when refusing an unknown one. */
const BENCHMARKS = (() => {
  const refused = spawnSync(process.execPath, [join(root, 'scripts', 'bench.mjs'), 'no-such-benchmark'], { encoding: 'utf8' });
  return (/the benchmarks: (.+)$/m.exec(refused.stderr)?.[1] ?? '').split(', ');
})();
const STAND_IN = `const name = new URL(import.meta.url).pathname.split('/').at(-1).replace(/\\.ts$/, '');
console.log('ran ' + name);
if (process.env.BENCH_FAILS === name) process.exit(3);
if (process.env.BENCH_WAITS === name) {
  process.on('SIGTERM', () => { console.log('stopped ' + name); process.exit(143); });
  console.log('waiting');
  setInterval(() => undefined, 1000);
}
`;

const scratch = mkdtempSync(join(tmpdir(), 'bench-runner-'));
mkdirSync(join(scratch, 'scripts'));
mkdirSync(join(scratch, 'bench'));
copyFileSync(join(root, 'scripts', 'bench.mjs'), join(scratch, 'scripts', 'bench.mjs'));
symlinkSync(join(root, 'node_modules'), join(scratch, 'node_modules'));
for (const name of BENCHMARKS) writeFileSync(join(scratch, 'bench', `${name}.ts`), STAND_IN);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runners started and not yet seen to end, with the stand-in benchmarks they started (one process group each). */
const runners: ChildProcess[] = [];
afterEach(() => {
  for (const runner of runners.splice(0)) signalGroup(runner.pid, 'SIGKILL');
});

/** Starts the runner with `args` and `env`; its process and everything it printed so far. */
function startRunner(args: readonly string[], env: Record<string, string> = {}): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [join(scratch, 'scripts', 'bench.mjs'), ...args], {
    cwd: scratch,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += String(chunk);
  });
  child.stderr?.on('data', (chunk) => {
    output += String(chunk);
  });
  return { child, output: () => output };
}

/** Runs the runner to its end; its exit code and the benchmarks that ran, in order. */
async function run(args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number | null; ran: string[]; output: string }> {
  const { child, output } = startRunner(args, env);
  await ended(child);
  return { code: child.exitCode, ran: [...output().matchAll(/^ran (\S+)$/gm)].map((match) => match[1]!), output: output() };
}

describe('npm run bench (scripts/bench.mjs)', () => {
  it('runs every benchmark in turn', async () => {
    expect(BENCHMARKS).toContain('observe-and-edge');
    expect(await run([])).toMatchObject({ code: 0, ran: BENCHMARKS });
  });

  it('runs only the benchmarks named, in the order given', async () => {
    expect(await run(['settle', 'fleet'])).toMatchObject({ code: 0, ran: ['settle', 'fleet'] });
  });

  it('refuses an unknown name with exit 2 and runs nothing', async () => {
    const { code, ran, output } = await run(['settle', 'nope']);
    expect({ code, ran }).toEqual({ code: 2, ran: [] });
    expect(output).toContain('unknown benchmark nope');
  });

  it('stops at the first benchmark that fails, with its exit code', async () => {
    expect(await run([], { BENCH_FAILS: 'live-view' })).toMatchObject({ code: 3, ran: ['observe-and-edge', 'screenshot-overhead', 'live-view'] });
  });

  it('passes SIGTERM to the running benchmark, starts no other, and exits as it did', async () => {
    const { child, output } = startRunner([], { BENCH_WAITS: 'screenshot-overhead' });
    await until(
      () => output().includes('waiting'),
      () => `waiting, in: ${output()}`,
      30_000,
    );
    child.kill('SIGTERM');
    await ended(child);
    expect(child.exitCode).toBe(143);
    expect(output()).toContain('stopped screenshot-overhead');
    expect(output()).not.toContain('ran live-view');
  });
});
