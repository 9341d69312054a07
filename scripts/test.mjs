#!/usr/bin/env node
// `npm test` after set-up: the lint (`npm run lint`: Biome's rules, format check, import order
// and cycles, then the 400-line rule of scripts/check-file-sizes.mjs), the check that drizzle/
// matches the schema (scripts/check-migrations.mjs), the typecheck, then every
// vitest project (edge in workerd, host in real Chromium, e2e with real processes). A failing
// step does not hide the ones after it: all run, and the last line counts the tests,
// `N passed, N failed`.
//
// The edge project (workerd and D1, no browser, no timing) runs beside the lint, the typecheck
// and the host project, its output held back and printed whole when it ends; the e2e project runs
// alone afterwards. That keeps the whole run well under 30 minutes on 2 cores.
import { spawn, spawnSync } from 'node:child_process';
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
const requested = process.argv.slice(2).length ? process.argv.slice(2) : ['edge', 'host', 'e2e'];

const vitestArgs = (project) => ['run', '--project', project, '--reporter=default', '--reporter=json', `--outputFile.json=${join(reports, `${project}.json`)}`];

/** Counts a finished project from its JSON report. */
function count(project, status) {
  const report = join(reports, `${project}.json`);
  if (!existsSync(report)) {
    problems.push(`${project} (no report; exit ${status})`);
    failed++;
    return;
  }
  const summary = JSON.parse(readFileSync(report, 'utf8'));
  passed += summary.numPassedTests;
  // A file whose set-up or tear-down failed counts too, even when none of its tests did.
  failed += summary.numFailedTests + (summary.numFailedTests === 0 ? summary.numFailedTestSuites : 0);
  if (status !== 0 || summary.numFailedTests > 0 || summary.numTotalTests === 0) problems.push(`${project} (exit ${status})`);
}

/** Runs one project in the foreground, its output straight through. */
function runProject(project) {
  console.log(`\n== vitest project ${project}`);
  rmSync(join(reports, `${project}.json`), { force: true });
  const result = spawnSync(bin('vitest'), vitestArgs(project), { cwd: root, stdio: 'inherit' });
  count(project, result.status);
}

/**
 * Starts the edge project in the background, writing straight to a log file (the foreground
 * steps block this process, so nothing here may depend on its event loop meanwhile); the log is
 * printed when the project has ended.
 */
function startEdge() {
  rmSync(join(reports, 'edge.json'), { force: true });
  const log = join(reports, 'edge.log');
  const fd = openSync(log, 'w');
  const child = spawn(bin('vitest'), vitestArgs('edge'), { cwd: root, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  return new Promise((resolve) => {
    let failure;
    child.on('error', (error) => {
      failure = error;
    });
    // 'close' follows 'exit', or 'error' when the child could not start.
    child.on('close', (status) => {
      console.log('\n== vitest project edge (ran beside the lint, the typecheck and the host project)');
      if (failure) console.log(`vitest did not start: ${failure.message}`);
      else process.stdout.write(readFileSync(log, 'utf8'));
      count('edge', status);
      resolve();
    });
  });
}

const edge = requested.includes('edge') ? startEdge() : Promise.resolve();

console.log('\n== lint');
const lint = spawnSync(bin('biome'), ['check', '.'], { cwd: root, stdio: 'inherit' });
if (lint.status !== 0) problems.push('lint');
const fileSizes = spawnSync(process.execPath, [join(root, 'scripts', 'check-file-sizes.mjs')], { cwd: root, stdio: 'inherit' });
if (fileSizes.status !== 0) problems.push('file sizes');
const migrationsMatch = spawnSync(process.execPath, [join(root, 'scripts', 'check-migrations.mjs')], { cwd: root, stdio: 'inherit' });
if (migrationsMatch.status !== 0) problems.push('migrations');

console.log('\n== typecheck');
const typecheck = spawnSync(bin('tsc'), ['--noEmit', '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
if (typecheck.status !== 0) problems.push('typecheck');

if (requested.includes('host')) runProject('host');
await edge;
if (requested.includes('e2e')) runProject('e2e');
for (const project of requested.filter((name) => !['edge', 'host', 'e2e'].includes(name))) runProject(project);

console.log(`\n${problems.length ? `failed: ${problems.join(', ')}` : 'all suites passed'}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(problems.length ? 1 : 0);
