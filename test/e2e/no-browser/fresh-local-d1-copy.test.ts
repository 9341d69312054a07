import * as fs from 'node:fs';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { freshD1Key, prepareFreshLocalD1 } from '../../../scripts/local-edge.ts';
import { readDevVars } from '../../../scripts/setup.mjs';

// A copy of the local D1 template can fail part-way: another process moves a template of other
// migrations aside (it never removes one in place) while this one copies it. What came across
// must go, and the copy is made once more; it once counted as whole when the mark had come across
// first. The template here is made by hand (no wrangler): only the copying is under test.

/** How many of the next copies fail after copying part of the template. */
let failingCopies = 0;
vi.mock('node:fs', async (original) => {
  const real = await original<typeof import('node:fs')>();
  return {
    ...real,
    cpSync: (source: string, destination: string, options?: fs.CopySyncOptions) => {
      if (failingCopies > 0 && source.includes('templates')) {
        failingCopies--;
        real.mkdirSync(destination, { recursive: true });
        real.copyFileSync(join(source, '.template-whole'), join(destination, '.template-whole'));
        throw Object.assign(new Error(`ENOENT: no such file or directory, lstat '${join(source, 'v3')}'`), { code: 'ENOENT' });
      }
      real.cpSync(source, destination, options);
    },
  };
});

const scratch = mkdtempSync(join(tmpdir(), 'fresh-local-d1-copy-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const vars = readDevVars();
const templates = join(scratch, 'templates');
const template = join(templates, freshD1Key(vars));

beforeEach(() => {
  rmSync(templates, { recursive: true, force: true });
  fs.mkdirSync(join(template, 'v3'), { recursive: true });
  writeFileSync(join(template, 'v3', 'database'), 'tables');
  writeFileSync(join(template, '.template-whole'), 'whole');
});

describe('copying the local D1 template', () => {
  it('removes what a copy that failed part-way left, and copies once more', () => {
    failingCopies = 1;
    const target = join(scratch, 'once');
    prepareFreshLocalD1(vars, target, templates);
    expect(readdirSync(join(target, 'v3'))).toEqual(['database']);
    expect(failingCopies).toBe(0);
  });

  it('gives up after the second failed copy and leaves nothing of it', () => {
    failingCopies = 2;
    const target = join(scratch, 'twice');
    expect(() => prepareFreshLocalD1(vars, target, templates)).toThrow(/ENOENT/);
    expect(fs.existsSync(target)).toBe(false);
  });
});
