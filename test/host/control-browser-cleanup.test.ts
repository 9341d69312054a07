import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { Deadline } from '../../browser-host/deadline.ts';
import { launchControlBrowser } from '../../browser-host/profiles.ts';

// ADR-0164: "remote verification reserves its two temporary loads until cleanup finishes";
// nothing leaks. A differential verification whose control browser does not start within the
// verification's deadline (a loaded machine: seen in practice as "the control browser did not
// start: ... Timeout 2981ms exceeded") must not delete the temporary user-data directory while
// Chromium is still starting: Chromium would then recreate and write it, and nothing would ever
// remove it, one `host-control-*` directory leaked per failed launch.

describe('control browser cleanup', () => {
  const saved = process.env.TMPDIR;
  let scratch: string;
  afterAll(async () => {
    process.env.TMPDIR = saved;
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  test('a control browser that does not start in time leaves no temporary directory behind', async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'review-tmp-'));
    process.env.TMPDIR = scratch; // os.tmpdir() reads it on every call: only this test's directories land here
    for (const ms of [300, 600, 900]) {
      const deadline = Deadline.after(ms);
      try {
        const control = await launchControlBrowser(deadline, {
          chromiumPath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
          headless: true,
          display: undefined,
          profilesDir: scratch,
        });
        await control.close();
      } catch {
        // did not start in time: expected on purpose
      } finally {
        deadline.dispose();
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect((await readdir(scratch)).filter((name) => name.startsWith('host-control-'))).toEqual([]);
  });
});
