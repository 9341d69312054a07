import { mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { npmPackagesState, recordNpmPackages } from '../../../scripts/setup.mjs';

// `npm run setup` (and with it `npm test` and `npm run demo`) runs `npm ci` only when the packages
// were not installed from this package-lock.json. It once decided by date: a fresh checkout's lock
// file is newer than any install, so a checkout whose node_modules is a link to another's ran
// `npm ci` through the link and emptied the other checkout's packages.

const scratch = mkdtempSync(join(tmpdir(), 'setup-packages-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const LOCK = '{"name":"governed-browser","lockfileVersion":3}\n';
let checkouts = 0;

/** A checkout with `lock` as its package-lock.json, written now (a fresh clone's date). */
function checkout(lock = LOCK): string {
  const directory = join(scratch, `checkout-${++checkouts}`);
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, 'package-lock.json'), lock);
  return directory;
}

/**
 * node_modules in `directory` as `npm ci` leaves it (its `.package-lock.json` dated `secondsAgo`),
 * recorded by set-up unless `recorded` is false (an install made before the record existed).
 */
function installed(directory: string, { secondsAgo = 3_600, recorded = true } = {}): string {
  const modules = join(directory, 'node_modules');
  mkdirSync(modules, { recursive: true });
  writeFileSync(join(modules, '.package-lock.json'), LOCK);
  const then = new Date(Date.now() - secondsAgo * 1_000);
  utimesSync(join(modules, '.package-lock.json'), then, then);
  if (recorded) recordNpmPackages(directory);
  return modules;
}

describe('whether set-up installs the npm packages', () => {
  it('installs when there is no node_modules, and not when it was installed from the same lock, however old', () => {
    const fresh = checkout();
    expect(npmPackagesState(fresh)).toBe('install');
    installed(fresh, { secondsAgo: 86_400 });
    expect(npmPackagesState(fresh)).toBe('current');
  });

  it('installs when the lock changed since, or when npm changed the packages since (npm install)', () => {
    const changed = checkout();
    installed(changed);
    writeFileSync(join(changed, 'package-lock.json'), `${LOCK} `);
    expect(npmPackagesState(changed)).toBe('install');
    const reinstalled = checkout();
    const modules = installed(reinstalled);
    writeFileSync(join(modules, '.package-lock.json'), `${LOCK}\n`);
    expect(npmPackagesState(reinstalled)).toBe('install');
  });

  it("never installs through a link to another checkout's packages unless they are recorded as of the same lock", () => {
    const main = checkout();
    const mainModules = installed(main);
    const sameLock = checkout();
    symlinkSync(mainModules, join(sameLock, 'node_modules'));
    expect(npmPackagesState(sameLock)).toBe('current');
    const otherLock = checkout(`${LOCK}\n`);
    symlinkSync(mainModules, join(otherLock, 'node_modules'));
    expect(npmPackagesState(otherLock)).toBe('linked');
    // Packages installed before the record existed are not taken by date through a link.
    const unrecorded = installed(checkout(), { recorded: false, secondsAgo: 0 });
    const linkedToUnrecorded = checkout();
    symlinkSync(unrecorded, join(linkedToUnrecorded, 'node_modules'));
    expect(npmPackagesState(linkedToUnrecorded)).toBe('linked');
    const dangling = checkout();
    symlinkSync(join(scratch, 'nowhere'), join(dangling, 'node_modules'));
    expect(npmPackagesState(dangling)).toBe('linked');
  });

  it('takes a node_modules directory installed before the record existed as current while it is not older than the lock', () => {
    const before = checkout();
    const modules = installed(before, { recorded: false, secondsAgo: 0 });
    utimesSync(join(before, 'package-lock.json'), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    expect(npmPackagesState(before)).toBe('current');
    const then = new Date(Date.now() - 3_600_000);
    utimesSync(join(modules, '.package-lock.json'), then, then);
    expect(npmPackagesState(before)).toBe('install');
  });
});
