#!/usr/bin/env node
// `npm test` after set-up: the lint (`npm run lint`: Biome's rules, format check, import order
// and cycles, then the 400-line rule of scripts/check-file-sizes.mjs), the check that drizzle/
// matches the schema (scripts/check-migrations.mjs), the typecheck, then every vitest project
// (edge in workerd; e2e-no-browser, real processes without Chromium; host in real Chromium; e2e,
// real stacks with Chromium). A failing step does not hide the ones after it: all run, and the
// last line counts the tests, `N passed, N failed`.
//
// Two lanes, each ending on a shared queue of e2e files. The background lane holds what starts
// no browser, one step after the other: the lint, the file sizes, the migrations check, the
// typecheck, the edge project, the e2e-no-browser project; each step's output is held back and
// printed whole when it ends. The foreground lane is the host project (real Chromium), its output
// straight through. Each lane, once its own steps are done, takes e2e files one at a time from
// the queue (each file its own vitest run, printed whole when it ends), so the e2e suite starts
// beside the host project as soon as the background lane is free and runs two files at a time
// once the host project is done. The queue is longest file first, by the durations of the last
// run on this clone when there are any (`.tmp/test-reports/e2e/`), else by file size: a long file
// left for last would keep one lane running alone. On a clean clone of 2 cores this took 31.2 min,
// against 37.6 with the e2e project after the host project (and the edge project at 872 s then,
// 148-213 s now: one workerd runtime for many files, vitest.config.ts). Both cores were busy for
// nearly all of it, so more lanes would not make it shorter; less work would.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
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

/** Where the e2e files' reports go, one per file. */
const e2eReports = join(reports, 'e2e');

/** The arguments of a vitest run of `project` (only `files` of it when given) writing its JSON report to `report`. */
const vitestArgs = (project, report = join(reports, `${project}.json`), files = []) => [
  'run',
  '--project',
  project,
  ...files,
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
];

/** Counts a finished vitest run (`project`: its name in the problems) from its JSON report. */
function count(project, status, report = join(reports, `${project}.json`)) {
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
 * Runs `command` in the background, writing straight to the log file `log`; prints the log
 * under `== title` when it has ended and resolves to its exit status (null when it could not
 * start or was killed).
 */
function runInBackground(title, log, command, args) {
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
      console.log(`\n== ${title}`);
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
  const beside = requested.includes('host') ? ' (in the background lane, beside the host project)' : '';
  for (const [title, name, command, args] of CHECKS) {
    const status = await runInBackground(`${title}${beside}`, join(reports, `${name}.log`), command, args);
    if (status !== 0) problems.push(title);
  }
  for (const project of BACKGROUND.filter((name) => requested.includes(name))) {
    rmSync(join(reports, `${project}.json`), { force: true });
    const log = join(reports, `${project}.log`);
    count(project, await runInBackground(`vitest project ${project}${beside}`, log, bin('vitest'), vitestArgs(project)));
  }
}

/** The name of an e2e file's report and log in {@link e2eReports}, without extension: its path, flattened. */
const reportNameOf = (file) => file.replaceAll('/', '__');

/** Seconds an e2e file took in the last run on this clone, from its report; undefined when unknown. */
function lastDurationOf(file) {
  try {
    const [result] = JSON.parse(readFileSync(join(e2eReports, `${reportNameOf(file)}.json`), 'utf8')).testResults;
    return (result.endTime - result.startTime) / 1000;
  } catch {
    return undefined;
  }
}

/**
 * The e2e project's files (vitest.config.ts: every `.test.ts` under test/e2e/ but test/e2e/no-browser/),
 * relative to the root, longest first: by the last run's durations when every file has one, else
 * by size in bytes.
 */
function e2eFilesLongestFirst() {
  if (!existsSync(join(root, 'test', 'e2e'))) return [];
  const files = readdirSync(join(root, 'test', 'e2e'), { recursive: true })
    .filter((file) => file.endsWith('.test.ts') && !file.startsWith('no-browser/'))
    .map((file) => join('test', 'e2e', file));
  const durations = new Map(files.map((file) => [file, lastDurationOf(file)]));
  const weight = [...durations.values()].every((seconds) => seconds !== undefined) ? (file) => durations.get(file) : (file) => statSync(join(root, file)).size;
  return files.sort((a, b) => weight(b) - weight(a) || a.localeCompare(b));
}

/** The e2e files no lane has taken yet. */
const e2eQueue = requested.includes('e2e') ? e2eFilesLongestFirst() : [];
if (e2eQueue.length) mkdirSync(e2eReports, { recursive: true });
else if (requested.includes('e2e')) {
  problems.push('e2e (no test files)');
  failed++;
}

/** Takes e2e files from the queue, one at a time, until it is empty; `lane` names the lane in each file's title. */
async function runE2eQueue(lane) {
  for (let file = e2eQueue.shift(); file !== undefined; file = e2eQueue.shift()) {
    const report = join(e2eReports, `${reportNameOf(file)}.json`);
    rmSync(report, { force: true });
    const log = join(e2eReports, `${reportNameOf(file)}.log`);
    const status = await runInBackground(`vitest project e2e: ${file} (${lane})`, log, bin('vitest'), vitestArgs('e2e', report, [file]));
    count(`e2e ${file}`, status, report);
  }
}

await Promise.all([
  runBackgroundLane().then(() => runE2eQueue('background lane')),
  (requested.includes('host') ? runProject('host') : Promise.resolve()).then(() => runE2eQueue('host lane')),
]);
for (const project of requested.filter((name) => ![...BACKGROUND, 'host', 'e2e'].includes(name))) await runProject(project);

console.log(`\n${problems.length ? `failed: ${problems.join(', ')}` : 'all suites passed'}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(problems.length ? 1 : 0);
