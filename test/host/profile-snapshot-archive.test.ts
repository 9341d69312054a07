import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { entries } from 'tar';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Deadline } from '../../browser-host/deadline.ts';
import { packProfile, type StorageState } from '../../browser-host/profile-snapshot/archive.ts';
import { SnapshotRefusal } from '../../browser-host/profile-snapshot/refusal.ts';
import { placementMarkerPath, prepareProfileDirectory, readPlacementMarker, writePlacementMarker } from '../../browser-host/profile-snapshot/restore.ts';
import { openSnapshot, sealSnapshot } from '../../browser-host/profile-snapshot/seal.ts';
import { type EdgeSnapshots, uploadSnapshot } from '../../browser-host/profile-snapshot/transfer.ts';
import { sealPath } from '../../browser-host/site-verification/seal.ts';
import { deriveSnapshotKey } from '../../shared/fleet.ts';
import { TEST_SECRET, temporaryDirectory } from '../support/host-fixture.ts';
import { SINK_SNAPSHOT_SECRET, type SnapshotSink, startSnapshotSink } from '../support/snapshot-sink.ts';

const STATE: StorageState = {
  cookies: [{ name: 'session', value: 'v', domain: 'example.test', path: '/', expires: -1, httpOnly: true, secure: false, sameSite: 'Lax' }],
  origins: [{ origin: 'https://example.test', localStorage: [{ name: 'draft', value: 'd' }] }],
};

let scratch: { dir: string; remove: () => Promise<void> };
let sink: SnapshotSink;
let edge: EdgeSnapshots;

beforeAll(async () => {
  scratch = await temporaryDirectory('snapshot-archive-');
  sink = await startSnapshotSink(TEST_SECRET);
  edge = { edgeUrl: sink.url, sharedSecret: TEST_SECRET, hostId: 'host-unit' };
});
afterAll(async () => {
  await sink.close();
  await scratch.remove();
});

/** Writes `files` (relative path → content) under a fresh directory named `name`. */
async function profileWith(name: string, files: Record<string, string>): Promise<string> {
  const dir = path.join(scratch.dir, name);
  for (const [relative, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, relative)), { recursive: true });
    await writeFile(path.join(dir, relative), content);
  }
  return dir;
}

async function archivePaths(archive: Uint8Array): Promise<string[]> {
  const paths: string[] = [];
  for await (const entry of entries(archive)) paths.push(entry.path);
  return paths;
}

/** Every file under `dir` with its content, relative paths sorted. */
async function filesUnder(dir: string): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const entry of (await readdir(dir, { recursive: true, withFileTypes: true })).filter((item) => item.isFile())) {
    const full = path.join(entry.parentPath, entry.name);
    found[path.relative(dir, full)] = await readFile(full, 'utf8');
  }
  return Object.fromEntries(Object.entries(found).sort(([a], [b]) => a.localeCompare(b)));
}

/** Seals `archive` for `profileId` and uploads it to the sink at `generation` (the profile's current one). */
async function storeSnapshot(profileId: string, generation: number, archive: Uint8Array): Promise<void> {
  const sealed = sealSnapshot(archive, await deriveSnapshotKey(SINK_SNAPSHOT_SECRET, profileId), profileId);
  expect(await uploadSnapshot(edge, profileId, generation, sealed, new AbortController().signal)).toMatchObject({ kind: 'stored' });
}

describe('the snapshot archive', () => {
  test("leaves Chromium's caches, crash dumps, locks and port file out at any depth, and carries the storage state and the account seal", async () => {
    const dir = await profileWith('packed', {
      'Local State': '{}',
      'Default/Cookies': 'cookies',
      'Default/Local Storage/leveldb/000003.log': 'log',
      'Default/Cache/Cache_Data/index': 'x',
      'Default/Code Cache/js/index': 'x',
      'Default/GPUCache/index': 'x',
      'Default/DawnGraphiteCache/index': 'x',
      'GrShaderCache/data_0': 'x',
      'ShaderCache/data_0': 'x',
      'Crashpad/settings.dat': 'x',
      DevToolsActivePort: '9222',
      SingletonCookie: 'x',
      '.org.chromium.Chromium.abc123': 'half written',
    });
    await symlink('host-1234', path.join(dir, 'SingletonLock'));
    const archive = await packProfile({ userDataDir: dir, storageState: STATE, accountSeal: '{"origins":{}}' });
    expect(await archivePaths(archive)).toEqual([
      'user-data/',
      'user-data/Default/',
      'user-data/Default/Cookies',
      'user-data/Default/Local Storage/',
      'user-data/Default/Local Storage/leveldb/',
      'user-data/Default/Local Storage/leveldb/000003.log',
      'user-data/Local State',
      'storage-state.json',
      'account-seal.json',
    ]);
  });

  test('a seal opens only with its key and for its profile; altered, truncated or foreign bytes are refused with the reason', async () => {
    const key = await deriveSnapshotKey('another-secret-of-at-least-32-bytes!!!!', 'p1');
    const archive = new TextEncoder().encode('archive bytes');
    const sealed = sealSnapshot(archive, key, 'p1');
    expect(openSnapshot(sealed, key, 'p1')).toEqual(archive);
    const notOpening = "the seal does not open: its bytes were altered, or it is not this profile's snapshot under this key";
    const altered = new Uint8Array(sealed);
    altered[20]! ^= 1;
    expect(() => openSnapshot(altered, key, 'p1')).toThrow(new SnapshotRefusal(notOpening));
    expect(() => openSnapshot(sealed.subarray(0, sealed.byteLength - 1), key, 'p1')).toThrow(new SnapshotRefusal(notOpening));
    expect(() => openSnapshot(sealed, key, 'p2')).toThrow(new SnapshotRefusal(notOpening));
    const otherKey = await deriveSnapshotKey('another-secret-of-at-least-32-bytes!!!!', 'p2');
    expect(() => openSnapshot(sealed, otherKey, 'p1')).toThrow(new SnapshotRefusal(notOpening));
    expect(() => openSnapshot(archive, key, 'p1')).toThrow(new SnapshotRefusal('not a sealed profile snapshot (no GBPS header)'));
  });
});

describe('preparing a profile directory for a placement', () => {
  test('an archive cut inside a valid seal is refused and the older snapshot restored whole: no file of the damaged one, the seal and the marker replaced', async () => {
    const profilesDir = path.join(scratch.dir, 'profiles-damaged');
    await mkdir(profilesDir);
    const good = await packProfile({
      userDataDir: await profileWith('good', { 'Default/Cookies': 'good cookies' }),
      storageState: STATE,
      accountSeal: 'good seal',
    });
    const newer = await packProfile({
      userDataDir: await profileWith('newer', { 'Default/A-first': 'newer', 'Default/Cookies': 'newer cookies', 'Default/Z-last': 'x'.repeat(200_000) }),
      storageState: STATE,
      accountSeal: undefined,
    });
    await sink.place('damaged');
    await storeSnapshot('damaged', 1, good);
    await storeSnapshot('damaged', 1, newer.subarray(0, Math.floor(newer.byteLength * 0.6)));
    // What the host had before: an older placement's directory and seal.
    await profileWith('profiles-damaged/damaged', { 'Default/Cookies': 'stale cookies', 'Default/Stale': 'x' });
    await writeFile(sealPath(profilesDir, 'damaged'), 'stale seal');
    await writePlacementMarker(profilesDir, 'damaged', 1);

    const grant = await sink.place('damaged');
    const deadline = Deadline.after(20_000);
    const prepared = await prepareProfileDirectory(deadline, { profilesDir, profileId: 'damaged', grant, edge });
    deadline.dispose();
    expect(prepared.report).toEqual({
      restored_version: 1,
      refused: [{ version: 2, reason: expect.stringMatching(/^the archive is damaged or truncated: /) }],
    });
    expect(await filesUnder(path.join(profilesDir, 'damaged'))).toEqual({ 'Default/Cookies': 'good cookies' });
    expect(await readFile(sealPath(profilesDir, 'damaged'), 'utf8')).toBe('good seal');
    expect(await readPlacementMarker(profilesDir, 'damaged')).toBe(2);
    expect(prepared.storage).toEqual(STATE);
    expect((await readdir(profilesDir)).sort()).toEqual(['damaged', 'damaged.placement.json', 'damaged.seal.json']);
  });

  test('the directory is kept at the same generation, or without a marker when there is nothing to restore; at another generation with nothing to restore it starts empty', async () => {
    const profilesDir = path.join(scratch.dir, 'profiles-kept');
    const grant = { generation: 4, snapshot_key: await deriveSnapshotKey(SINK_SNAPSHOT_SECRET, 'kept'), restore: [] };
    const prepare = async (generation: number) => {
      const deadline = Deadline.after(10_000);
      try {
        return await prepareProfileDirectory(deadline, { profilesDir, profileId: 'kept', grant: { ...grant, generation }, edge });
      } finally {
        deadline.dispose();
      }
    };
    await profileWith('profiles-kept/kept', { 'Default/Cookies': 'from before fleets' });
    expect((await prepare(4)).report).toEqual({ restored_version: null, refused: [] });
    expect(await readPlacementMarker(profilesDir, 'kept')).toBe(4);
    expect(await prepare(4)).toMatchObject({ generation: 4, storage: undefined });
    expect(await filesUnder(path.join(profilesDir, 'kept'))).toEqual({ 'Default/Cookies': 'from before fleets' });

    expect((await prepare(5)).report).toEqual({ restored_version: null, refused: [] });
    expect(await filesUnder(path.join(profilesDir, 'kept'))).toEqual({});
    expect(JSON.parse(await readFile(placementMarkerPath(profilesDir, 'kept'), 'utf8'))).toMatchObject({ generation: 5 });
  });
});
