/**
 * Profiles that move (issue 32): what a signed-in profile's snapshot costs. A browser host in
 * this process snapshots to a stand-in for the edge's snapshot endpoints (test/support/
 * snapshot-sink.ts, loopback), over the real wire (the edge's side of it):
 *
 * - size: the sealed snapshot of a profile signed in on a local site (a session cookie, a
 *   persistent cookie, local storage), after one sign-in and one page (target at most 5 MB);
 * - write: from `lease.release` (which answers at once) to the edge holding the snapshot: the
 *   capture in the page's turn, the archive, the seal and the upload (target at most 1 s);
 * - restore: what the launch path does before Chromium starts on another host's fresh profiles
 *   directory (download, size and digest checks, open the seal, unpack, swap into place) (target
 *   at most 2 s); and, for scale, the whole `lease.acquire` on a second host, Chromium's start and
 *   putting the cookies and local storage back included.
 *
 * Medians over a few profiles, each a fresh one; figures, not assertions; headless Chromium.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseHostConfig } from '../browser-host/config.ts';
import { Deadline } from '../browser-host/deadline.ts';
import { type BrowserHost, startBrowserHost } from '../browser-host/host.ts';
import { prepareProfileDirectory } from '../browser-host/profile-snapshot/restore.ts';
import { connectHost, type HostClient } from '../test/support/host-client.ts';
import { startSessionSite } from '../test/support/session-site.ts';
import { startSnapshotSink } from '../test/support/snapshot-sink.ts';
import { row, summary } from './stats.ts';

const PROFILES = 5;
const SECRET = 'bench-shared-secret-of-at-least-32-bytes!!';
const TARGETS = { sizeBytes: 5 * 1024 * 1024, writeMs: 1_000, restoreMs: 2_000 };

const site = await startSessionSite();
const sink = await startSnapshotSink(SECRET);
const scratch = mkdtempSync(join(tmpdir(), 'bench-snapshots-'));

async function host(name: string): Promise<{ host: BrowserHost; client: HostClient }> {
  const config = parseHostConfig({
    HOST_SHARED_SECRET: SECRET,
    HOST_PORT: '0',
    HOST_HEADLESS: '1',
    HOST_ID: name,
    HOST_PROFILES_DIR: join(scratch, name),
    HOST_EDGE_URL: sink.url,
    CHROMIUM_PATH: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  });
  const started = await startBrowserHost(config);
  return { host: started, client: await connectHost(started.url, SECRET) };
}

/** Resolves with the moment the sink stored the profile's `count`th snapshot (`performance.now()`). */
async function storedAt(profileId: string, count: number): Promise<number> {
  const wait = Deadline.after(30_000);
  try {
    while (sink.stored(profileId).length < count) {
      if (!(await Deadline.pause(5, wait.signal))) throw new Error(`no snapshot of ${profileId} within 30 s`);
    }
    return sink.stored(profileId)[count - 1]!.storedAt;
  } finally {
    wait.dispose();
  }
}

const first = await host('bench-a');
const second = await host('bench-b');
const sizes: number[] = [];
const writes: number[] = [];
const restores: number[] = [];
const acquires: number[] = [];
try {
  for (let index = 0; index < PROFILES; index++) {
    const profileId = `bench-${index}`;
    const placement = await sink.place(profileId);
    const lease = await first.client.call('lease.acquire', { run_id: profileId, profile_id: profileId, origins: [site.origin], ttl_ms: 60_000, placement });
    await first.client.call('page.navigate', { lease_id: lease.lease_id, url: site.url(`sign-in?user=ada`), timeout_ms: 15_000 });
    await first.client.call('page.navigate', { lease_id: lease.lease_id, url: site.url('account'), timeout_ms: 15_000 });
    const released = performance.now();
    await first.client.call('lease.release', { lease_id: lease.lease_id });
    writes.push((await storedAt(profileId, 1)) - released);
    sizes.push(sink.stored(profileId)[0]!.bytes.byteLength);

    // The launch path's restore, alone, into a fresh profiles directory.
    const moved = await sink.place(profileId);
    const deadline = Deadline.after(30_000);
    const restoring = performance.now();
    const prepared = await prepareProfileDirectory(deadline, {
      profilesDir: join(scratch, `restore-${index}`),
      profileId,
      grant: moved,
      edge: { edgeUrl: sink.url, sharedSecret: SECRET, hostId: 'bench-restore' },
    });
    restores.push(performance.now() - restoring);
    deadline.dispose();
    if (prepared.report.restored_version !== 1) throw new Error(`restore refused: ${JSON.stringify(prepared.report)}`);

    // The whole acquisition on a second host, Chromium's start included.
    const again = await sink.place(profileId);
    const acquiring = performance.now();
    const there = await second.client.call('lease.acquire', {
      run_id: profileId,
      profile_id: profileId,
      origins: [site.origin],
      ttl_ms: 60_000,
      placement: again,
    });
    acquires.push(performance.now() - acquiring);
    if (there.restore?.restored_version !== 1) throw new Error(`acquire did not restore: ${JSON.stringify(there.restore)}`);
    await second.client.call('lease.release', { lease_id: there.lease_id });
  }
  const size = summary(sizes).median;
  console.log(`\nProfile snapshots (issue 32): ${PROFILES} signed-in profiles, headless Chromium, edge stand-in on loopback`);
  console.log(
    `  sealed snapshot size                          median ${(size / 1024).toFixed(1).padStart(8)} KiB   (target at most ${TARGETS.sizeBytes / 1024 / 1024} MB)`,
  );
  console.log(`${row('write: release to stored at the edge', writes)}   (target at most ${TARGETS.writeMs} ms)`);
  console.log(`${row('restore before Chromium starts', restores)}   (target at most ${TARGETS.restoreMs} ms)`);
  console.log(row('lease.acquire with restore, launch included', acquires));
} finally {
  for (const side of [first, second]) {
    await side.client.close();
    await side.host.close();
  }
  await sink.close();
  await site.close();
  rmSync(scratch, { recursive: true, force: true });
}
