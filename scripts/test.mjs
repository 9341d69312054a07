#!/usr/bin/env node
// `npm test` after set-up: the lint (`npm run lint`: Biome's rules, format check, import order
// and cycles, then the 400-line rule of scripts/check-file-sizes.mjs), the check that drizzle/
// matches the schema (scripts/check-migrations.mjs), the typecheck, then every vitest project
// (edge in workerd; e2e-no-browser, real processes without Chromium; host in real Chromium; e2e,
// real stacks with Chromium). A failing step does not hide the ones after it: all run, and the
// last line counts the tests, `N passed, N failed`.
//
// Two lanes, then the e2e project alone. The background lane holds what starts no browser, one
// step after the other: the lint, the file sizes, the migrations check, the typecheck, the edge
// project, the e2e-no-browser project; each step's output is held back and printed whole when it
// ends. The foreground lane is the host project (real Chromium), its output straight through.
// When both are done, the e2e project runs alone, two files at a time: its stacks do not share
// the machine with another browser suite. (Two e2e files at once used to fail their sign-in
// tests: on Workers every host connection ended 10 s after it opened, and a sign-in in the live
// view took longer than that on a loaded machine; fixed in d55630e.) On a clean clone of 2 cores
// the e2e project took 905 s, against 1318 s one file at a time, with the same 178 tests.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
const reports = join(root, '.tmp', 'test-reports');
mkdirSync(reports, { recursive: true });

let passed = 0;
let failed = 0;
const problems = [];
const requested = process.argv.slice(2).length ? process.argv.slice(2) : ['edge', 'e2e-no-browser', 'host', 'e2e'];
/** The projects of the background lane, in order: none starts a browser. */
const BACKGROUND = ['edge', 'e2e-no-browser'];

/** How many e2e files run at once (each starts its own edge, host and Chromium). */
const E2E_FILES_AT_ONCE = 2;

const vitestArgs = (project) => [
  'run',
  '--project',
  project,
  ...(project === 'e2e' ? [`--maxWorkers=${E2E_FILES_AT_ONCE}`] : []),
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${join(reports, `${project}.json`)}`,
];

/** Counts a finished project from its JSON report. */
function count(project, status) {
  const report = join(reports, `${project}.json`);
  if (!existsSync(report)) {
    problems.push(`${project} (no report; exit ${status})`);
    failed++;
    return;
  }
  let summary;
  try {
    summary = JSON.parse(readFileSync(report, 'utf8'));
  } catch {
    // Cut short (vitest killed while writing it): a failure, not a crash of the whole run.
    problems.push(`${project} (unreadable report; exit ${status})`);
    failed++;
    return;
  }
  passed += summary.numPassedTests;
  // A file whose set-up or tear-down failed counts too, even when none of its tests did; so does
  // a run vitest failed with every test passed (an unhandled error), as one.
  const failures = summary.numFailedTests || summary.numFailedTestSuites;
  failed += failures || (status !== 0 ? 1 : 0);
  if (status !== 0 || failures > 0 || summary.numTotalTests === 0) problems.push(`${project} (exit ${status})`);
}

/**
 * Runs one project in the foreground, its output straight through; resolves when it has ended.
 * Asynchronous, so the background lane's next step starts while it runs.
 */
function runProject(project) {
  console.log(`\n== vitest project ${project}`);
  rmSync(join(reports, `${project}.json`), { force: true });
  const child = spawn(bin('vitest'), vitestArgs(project), { cwd: root, stdio: 'inherit' });
  return new Promise((resolve) => {
    child.on('error', (error) => console.log(`vitest did not start: ${error.message}`));
    child.on('close', (status) => {
      count(project, status);
      resolve();
    });
  });
}

/**
 * Runs `command` in the background, writing straight to a log file; prints the log
 * under `== title` when it has ended and resolves to its exit status (null when it could not
 * start or was killed).
 */
function runInBackground(title, name, command, args) {
  const log = join(reports, `${name}.log`);
  const fd = openSync(log, 'w');
  const child = spawn(command, args, { cwd: root, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  return new Promise((resolve) => {
    let failure;
    child.on('error', (error) => {
      failure = error;
    });
    // 'close' follows 'exit', or 'error' when the child could not start.
    child.on('close', (status) => {
      console.log(`\n== ${title} (in the background lane, beside the host project)`);
      if (failure) console.log(`${command} did not start: ${failure.message}`);
      else process.stdout.write(readFileSync(log, 'utf8'));
      resolve(failure ? null : status);
    });
  });
}

/** The checks of the background lane: each a title, a name for its log and problem, and its command. */
const CHECKS = [
  ['lint', 'lint', bin('biome'), ['check', '.']],
  ['file sizes', 'file-sizes', process.execPath, [join(root, 'scripts', 'check-file-sizes.mjs')]],
  ['migrations match the schema', 'migrations', process.execPath, [join(root, 'scripts', 'check-migrations.mjs')]],
  ['typecheck', 'typecheck', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']],
];

/** The background lane: the checks, then the requested browser-free projects, one after the other. */
async function runBackgroundLane() {
  for (const [title, name, command, args] of CHECKS) {
    const status = await runInBackground(title, name, command, args);
    if (status !== 0) problems.push(title);
  }
  for (const project of BACKGROUND.filter((name) => requested.includes(name))) {
    rmSync(join(reports, `${project}.json`), { force: true });
    count(project, await runInBackground(`vitest project ${project}`, project, bin('vitest'), vitestArgs(project)));
  }
}

const background = runBackgroundLane();
if (requested.includes('host')) await runProject('host');
await background;
if (requested.includes('e2e')) await runProject('e2e');
for (const project of requested.filter((name) => ![...BACKGROUND, 'host', 'e2e'].includes(name))) await runProject(project);

console.log(`\n${problems.length ? `failed: ${problems.join(', ')}` : 'all suites passed'}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(problems.length ? 1 : 0);
