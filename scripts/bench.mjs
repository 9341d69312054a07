#!/usr/bin/env node
// `npm run bench` after set-up: each benchmark of bench/ in turn, each its own Node process
// (`node --import tsx`), stopping at the first that fails. `npm run bench -- settle fleet` runs
// only those (names without `.ts`). A signal (Ctrl-C, SIGTERM to npm) goes to the running
// benchmark, which stops the stack it started (scripts/stop-on-signal.ts); none starts after it,
// and this runner exits as the benchmark did. (A `sh -c 'a && b'` chain did not pass SIGTERM on:
// the benchmark and its stack went on running.)
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Every benchmark, in the order `npm run bench` runs them. */
const BENCHMARKS = [
  'observe-and-edge',
  'screenshot-overhead',
  'live-view',
  'act-round-trip',
  'settle',
  'decision-cost',
  'fleet',
  'profile-snapshot',
  'form-fill',
];

const requested = process.argv.slice(2);
const unknown = requested.filter((name) => !BENCHMARKS.includes(name) || !existsSync(join(root, 'bench', `${name}.ts`)));
if (unknown.length) {
  console.error(`unknown benchmark ${unknown.join(', ')}; the benchmarks: ${BENCHMARKS.join(', ')}`);
  process.exit(2);
}

/** The signal that stopped this runner, once one has. */
let stoppedBy;
/** The benchmark running now. */
let running;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    stoppedBy = signal;
    // Ctrl-C reaches the benchmark from the terminal as well; a second copy is harmless.
    running?.kill(signal);
  });
}

for (const name of requested.length ? requested : BENCHMARKS) {
  if (stoppedBy) break;
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench', `${name}.ts`)], { cwd: root, stdio: 'inherit' });
  running = child;
  const [code, signal] = await new Promise((resolve) => {
    child.on('error', (error) => {
      console.error(`bench/${name}.ts did not start: ${error.message}`);
      resolve([1, null]);
    });
    child.on('close', (exitCode, exitSignal) => resolve([exitCode, exitSignal]));
  });
  running = undefined;
  if (signal) process.exit(128 + constants.signals[signal]);
  if (code !== 0) process.exit(code);
}
if (stoppedBy) process.exit(128 + constants.signals[stoppedBy]);
