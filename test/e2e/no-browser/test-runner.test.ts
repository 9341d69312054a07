import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { root } from '../../../scripts/local-processes.ts';

// scripts/test.mjs (what `npm test` runs) in a scratch root whose biome, tsc and vitest are
// stand-ins: a vitest run that ends in ways the real suites rarely do (a report cut short, an
// unhandled error after every test passed) must still be counted, and the runner must finish.

const execFileAsync = promisify(execFile);
const scratch = mkdtempSync(join(tmpdir(), 'test-runner-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * A vitest stand-in: writes the report `VITEST_REPORT` (text; none when unset) and exits
 * `VITEST_EXIT`; a run given the file `VITEST_FAILING_FILE` writes `VITEST_FAILED_REPORT` and
 * exits 1. Each run appends its arguments' files (or `-`) to `ran.log` in its working directory.
 */
const VITEST = `#!/usr/bin/env node
const fs = require('node:fs');
const out = process.argv.find((arg) => arg.startsWith('--outputFile.json=')).slice('--outputFile.json='.length);
const files = process.argv.filter((arg) => arg.endsWith('.test.ts'));
fs.appendFileSync('ran.log', (files.join(' ') || '-') + '\\n');
const failing = files.includes(process.env.VITEST_FAILING_FILE);
const report = failing ? process.env.VITEST_FAILED_REPORT : process.env.VITEST_REPORT;
if (report) fs.writeFileSync(out, report);
process.exit(failing ? 1 : Number(process.env.VITEST_EXIT));
`;

/**
 * Runs a copy of scripts/test.mjs for `projects` (default `edge`) with the stand-ins, in a root
 * that also holds the empty test files `files`; its exit code, last two lines, and the files each
 * vitest run was given (`-` for a whole project), in the order they began.
 */
async function runTestScript(
  env: Record<string, string>,
  projects: readonly string[] = ['edge'],
  files: readonly string[] = [],
): Promise<{ code: number; lines: string[]; ran: string[] }> {
  const at = mkdtempSync(join(scratch, 'root-'));
  mkdirSync(join(at, 'scripts'));
  for (const file of files) {
    mkdirSync(join(at, dirname(file)), { recursive: true });
    writeFileSync(join(at, file), '');
  }
  mkdirSync(join(at, 'node_modules', '.bin'), { recursive: true });
  copyFileSync(join(root, 'scripts', 'test.mjs'), join(at, 'scripts', 'test.mjs'));
  for (const check of ['check-file-sizes.mjs', 'check-migrations.mjs']) writeFileSync(join(at, 'scripts', check), '');
  for (const [name, text] of [
    ['biome', '#!/bin/sh\n'],
    ['tsc', '#!/bin/sh\n'],
    ['vitest', VITEST],
  ] as const) {
    writeFileSync(join(at, 'node_modules', '.bin', name), text);
    chmodSync(join(at, 'node_modules', '.bin', name), 0o755);
  }
  const run = execFileAsync(process.execPath, [join(at, 'scripts', 'test.mjs'), ...projects], { cwd: at, env: { ...process.env, ...env } });
  const { code, stdout } = await run.then(
    (done) => ({ code: 0, stdout: done.stdout }),
    (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
  );
  const ran = existsSync(join(at, 'ran.log')) ? readFileSync(join(at, 'ran.log'), 'utf8').trim().split('\n') : [];
  return { code, lines: stdout.trim().split('\n').slice(-2), ran };
}

const passing = JSON.stringify({ numPassedTests: 3, numFailedTests: 0, numFailedTestSuites: 0, numTotalTests: 3 });

describe('npm test (scripts/test.mjs) counts every way a project can fail', () => {
  it('passes a project whose tests all pass', async () => {
    expect(await runTestScript({ VITEST_REPORT: passing, VITEST_EXIT: '0' })).toEqual({
      code: 0,
      lines: ['all suites passed', '3 passed, 0 failed'],
      ran: ['-'],
    });
  });

  it('counts a failure, and still ends with its totals, when the report was cut short', async () => {
    const { code, lines } = await runTestScript({ VITEST_REPORT: '{"numPassedTests": 3,', VITEST_EXIT: '1' });
    expect(code).toBe(1);
    expect(lines).toEqual(['failed: edge (unreadable report; exit 1)', '0 passed, 1 failed']);
  });

  it('counts a failure when vitest failed the run although every test passed (an unhandled error)', async () => {
    const { code, lines } = await runTestScript({ VITEST_REPORT: passing, VITEST_EXIT: '1' });
    expect(code).toBe(1);
    expect(lines).toEqual(['failed: edge (exit 1)', '3 passed, 1 failed']);
  });

  it('runs each e2e file on its own, none of test/e2e/no-browser/, and counts the one that failed by name', async () => {
    const failed = JSON.stringify({ numPassedTests: 1, numFailedTests: 2, numFailedTestSuites: 0, numTotalTests: 3 });
    const files = ['test/e2e/a.test.ts', 'test/e2e/bb.test.ts', 'test/e2e/nested/c.test.ts', 'test/e2e/no-browser/d.test.ts'];
    const env = { VITEST_REPORT: passing, VITEST_EXIT: '0', VITEST_FAILING_FILE: 'test/e2e/bb.test.ts', VITEST_FAILED_REPORT: failed };
    const { code, lines, ran } = await runTestScript(env, ['e2e'], files);
    expect(code).toBe(1);
    expect(lines).toEqual(['failed: e2e test/e2e/bb.test.ts (exit 1)', '7 passed, 2 failed']);
    expect([...ran].sort()).toEqual(['test/e2e/a.test.ts', 'test/e2e/bb.test.ts', 'test/e2e/nested/c.test.ts']);
  });

  it('fails an e2e project that has no test files', async () => {
    const { code, lines } = await runTestScript({ VITEST_REPORT: passing, VITEST_EXIT: '0' }, ['e2e'], ['test/e2e/no-browser/d.test.ts']);
    expect(code).toBe(1);
    expect(lines).toEqual(['failed: e2e (no test files)', '0 passed, 1 failed']);
  });
});
