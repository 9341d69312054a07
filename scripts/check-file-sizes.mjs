#!/usr/bin/env node
// Part of `npm run lint` (and so of `npm test`): every source file in edge/, browser-host/ and
// shared/ holds at most 400 lines, so a file that grows past one job is split the day it passes
// the line instead of sliding (issue 30). Import cycles are Biome's `noImportCycles` rule, in the
// same lint. Plain Node with no dependencies.
//
// `OVER_THE_LINE` lists the files still waiting for their split, each with the count it may not
// grow past: a listed file that grows fails, a listed file that shrinks under 400 must leave the
// list (so the list only ever gets shorter).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Most lines a source file may hold. */
export const MAX_SOURCE_LINES = 400;
const SOURCE_DIRECTORIES = ['edge', 'browser-host', 'shared'];
const SOURCE_FILE = /\.(ts|mts|js|mjs|css)$/;

/** Files not yet split, path (from the repository root) → the line count they may not exceed. */
const OVER_THE_LINE = new Map([]);

/** The source files under `directory`, recursively, as paths relative to the repository root. */
function sourceFiles(directory) {
  const found = [];
  for (const entry of readdirSync(join(root, directory), { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) found.push(...sourceFiles(path));
    else if (SOURCE_FILE.test(entry.name)) found.push(path);
  }
  return found;
}

/** Lines of a file as an editor counts them: a final newline does not start another line. */
function lineCount(path) {
  const text = readFileSync(join(root, path), 'utf8');
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

const names = SOURCE_DIRECTORIES.flatMap(sourceFiles).map((path) => path.split('\\').join('/'));
const problems = [];
for (const name of names) {
  const lines = lineCount(name);
  const allowance = OVER_THE_LINE.get(name);
  if (allowance === undefined) {
    if (lines > MAX_SOURCE_LINES) problems.push(`${name}: ${lines} lines, over ${MAX_SOURCE_LINES}: split it by job`);
  } else if (lines > allowance) {
    problems.push(`${name}: ${lines} lines, over its ${allowance} while it waits for its split`);
  } else if (lines <= MAX_SOURCE_LINES) {
    problems.push(`${name}: ${lines} lines, under ${MAX_SOURCE_LINES} now: take it off OVER_THE_LINE in scripts/check-file-sizes.mjs`);
  }
}
for (const name of OVER_THE_LINE.keys()) {
  if (!names.includes(name)) {
    problems.push(`${name}: listed in OVER_THE_LINE but gone: take it off the list`);
  }
}

if (problems.length > 0) {
  console.error(`file sizes: ${problems.length} problem(s)\n${problems.map((line) => `  ${line}`).join('\n')}`);
  process.exit(1);
}
console.log(`file sizes: every source file in ${SOURCE_DIRECTORIES.join(', ')} within ${MAX_SOURCE_LINES} lines`);
