import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { npmPackagesState } from '../../../scripts/setup.mjs';

// `npm run setup` (and with it `npm test` and `npm run demo`) runs `npm ci` only when the packages
// were not installed from this package-lock.json. It once decided by date: a fresh checkout's lock
// file is newer than any install, so a checkout whose node_modules is a link to another's ran
// `npm ci` through the link and emptied the other checkout's packages.

const scratch = mkdtempSync(join(tmpdir(), 'setup-packages-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const LOCK = '{"name":"governed-browser","lockfileVersion":3}\n';
const digest = (text: string) => createHash('sha256').update(text).digest('hex');
let checkouts = 0;

/** A checkout with `lock` as its package-lock.json, written now (a fresh clone's date). */
function checkout(lock = LOCK): string {
  const directory = join(scratch, `checkout-${++checkouts}`);
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, 'package-lock.json'), lock);
  return directory;
}

/** node_modules in `directory` as `npm ci` and set-up leave it, installed from `lock`, dated `secondsAgo`. */
function installed(directory: string, lock = LOCK, secondsAgo = 3_600): string {
  const modules = join(directory, 'node_modules');
  mkdirSync(modules, { recursive: true });
  writeFileSync(join(modules, '.package-lock.json'), lock);
  writeFileSync(join(modules, '.installed-lock-sha256'), `${digest(lock)}\n`);
  const then = new Date(Date.now() - secondsAgo * 1_000);
  utimesSync(join(modules, '.package-lock.json'), then, then);
  return modules;
}

describe('whether set-up installs the npm packages', () => {
  it('installs when there is no node_modules, and not when it was installed from the same lock, however old', () => {
    const fresh = checkout();
    expect(npmPackagesState(fresh)).toBe('install');
    installed(fresh, LOCK, 86_400);
    expect(npmPackagesState(fresh)).toBe('current');
  });

  it('installs when the lock changed since the packages were installed', () => {
    const changed = checkout(`${LOCK} `);
    installed(changed, LOCK, 0);
    expect(npmPackagesState(changed)).toBe('install');
  });

  it("never installs through a link to another checkout's packages of another lock, and uses them when they are of the same lock", () => {
    const main = checkout();
    const mainModules = installed(main);
    const sameLock = checkout();
    symlinkSync(mainModules, join(sameLock, 'node_modules'));
    expect(npmPackagesState(sameLock)).toBe('current');
    const otherLock = checkout(`${LOCK}\n`);
    symlinkSync(mainModules, join(otherLock, 'node_modules'));
    expect(npmPackagesState(otherLock)).toBe('linked');
  });

  it('takes packages installed before the record existed as current while they are not older than the lock', () => {
    const before = checkout();
    const modules = join(before, 'node_modules');
    mkdirSync(modules);
    writeFileSync(join(modules, '.package-lock.json'), LOCK);
    expect(npmPackagesState(before)).toBe('current');
    const then = new Date(Date.now() - 3_600_000);
    utimesSync(join(modules, '.package-lock.json'), then, then);
    expect(npmPackagesState(before)).toBe('install');
  });
});
