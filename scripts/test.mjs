#!/usr/bin/env node
// `npm test` after set-up: the lint (`npm run lint`: Biome's rules, format check and import
// order), the typecheck, then every vitest project one after another (edge in workerd, host in
// real Chromium, e2e with real processes). A failing step does not hide the ones after it: all
// run, and the last line counts the tests, `N passed, N failed`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
const reports = join(root, '.tmp', 'test-reports');
mkdirSync(reports, { recursive: true });

let passed = 0;
let failed = 0;
const problems = [];

console.log('\n== lint');
const lint = spawnSync(bin('biome'), ['check', '.'], { cwd: root, stdio: 'inherit' });
if (lint.status !== 0) problems.push('lint');

console.log('\n== typecheck');
const typecheck = spawnSync(bin('tsc'), ['--noEmit', '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
if (typecheck.status !== 0) problems.push('typecheck');

for (const project of process.argv.slice(2).length ? process.argv.slice(2) : ['edge', 'host', 'e2e']) {
  console.log(`\n== vitest project ${project}`);
  const report = join(reports, `${project}.json`);
  rmSync(report, { force: true });
  const result = spawnSync(bin('vitest'), ['run', '--project', project, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`], {
    cwd: root,
    stdio: 'inherit',
  });
  if (!existsSync(report)) {
    problems.push(`${project} (no report; exit ${result.status})`);
    failed++;
    continue;
  }
  const summary = JSON.parse(readFileSync(report, 'utf8'));
  passed += summary.numPassedTests;
  // A file whose set-up or tear-down failed counts too, even when none of its tests did.
  failed += summary.numFailedTests + (summary.numFailedTests === 0 ? summary.numFailedTestSuites : 0);
  if (result.status !== 0 || summary.numFailedTests > 0 || summary.numTotalTests === 0) problems.push(`${project} (exit ${result.status})`);
}

console.log(`\n${problems.length ? `failed: ${problems.join(', ')}` : 'all suites passed'}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(problems.length ? 1 : 0);
