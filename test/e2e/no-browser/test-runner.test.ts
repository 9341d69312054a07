import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { root } from '../../../scripts/local-processes.ts';

// scripts/test.mjs (what `npm test` runs) in a scratch root whose biome, tsc and vitest are
// stand-ins: a vitest run that ends in ways the real suites rarely do (a report cut short, an
// unhandled error after every test passed) must still be counted, and the runner must finish.

const execFileAsync = promisify(execFile);
const scratch = mkdtempSync(join(tmpdir(), 'test-runner-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A vitest stand-in: writes the report `VITEST_REPORT` (text; none when unset) and exits `VITEST_EXIT`. */
const VITEST = `#!/usr/bin/env node
const out = process.argv.find((arg) => arg.startsWith('--outputFile.json=')).slice('--outputFile.json='.length);
if (process.env.VITEST_REPORT) require('node:fs').writeFileSync(out, process.env.VITEST_REPORT);
process.exit(Number(process.env.VITEST_EXIT));
`;

/** Runs a copy of scripts/test.mjs for project `edge` with the stand-ins; its exit code and last two lines. */
async function runTestScript(env: Record<string, string>): Promise<{ code: number; lines: string[] }> {
  const at = mkdtempSync(join(scratch, 'root-'));
  mkdirSync(join(at, 'scripts'));
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
  const run = execFileAsync(process.execPath, [join(at, 'scripts', 'test.mjs'), 'edge'], { env: { ...process.env, ...env } });
  const { code, stdout } = await run.then(
    (done) => ({ code: 0, stdout: done.stdout }),
    (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
  );
  return { code, lines: stdout.trim().split('\n').slice(-2) };
}

const passing = JSON.stringify({ numPassedTests: 3, numFailedTests: 0, numFailedTestSuites: 0, numTotalTests: 3 });

describe('npm test (scripts/test.mjs) counts every way a project can fail', () => {
  it('passes a project whose tests all pass', async () => {
    expect(await runTestScript({ VITEST_REPORT: passing, VITEST_EXIT: '0' })).toEqual({ code: 0, lines: ['all suites passed', '3 passed, 0 failed'] });
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
});
