import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { PlacementGrant, RefusedSnapshot, RestoreReport } from '../../shared/fleet.ts';
import { ProfileId } from '../../shared/protocol.ts';
import type { Deadline } from '../deadline.ts';
import { sealPath } from '../site-verification/seal.ts';
import { type RestoredStorage, unpackProfile } from './archive.ts';
import { boundedReason, SnapshotRefusal } from './refusal.ts';
import { openSnapshot } from './seal.ts';
import { downloadSnapshot, type EdgeSnapshots } from './transfer.ts';

// Restoring a profile before its Chromium starts (issue 32). Beside each profile's directory the
// host keeps a placement marker, `<profilesDir>/<profileId>.placement.json` (profile ids have no
// dots), naming the placement generation it last served the profile at. The directory is kept
// only when the marker is the grant's generation, or when there is no marker and nothing to
// restore (a directory from before fleets); otherwise it is replaced by the newest snapshot that
// passes every check, or by an empty directory when none does.
//
// A snapshot is downloaded, its size and digest checked, its seal opened and its archive unpacked
// into a fresh staging directory inside `profilesDir`; only a complete unpack is renamed into the
// profile's place (the old directory renamed away first and removed after), so the profile
// directory is at every moment either the old one, absent, or the whole new one: never half
// restored. A crash in between leaves the old marker, so the next launch restores again.

const PlacementMarker = z.strictObject({ generation: z.int().min(1), written_at_ms: z.int().min(0) });

/** Prefixes of the staging and replaced directories inside `profilesDir` (never a profile id: those have no dots). */
const STAGING_PREFIX = '.restore-';
const REPLACED_PREFIX = '.replaced-';

/** The placement marker of a profile. @throws Error for an id outside the profile alphabet. */
export function placementMarkerPath(profilesDir: string, profileId: string): string {
  if (!ProfileId.safeParse(profileId).success) throw new Error('not a profile id');
  return path.join(profilesDir, `${profileId}.placement.json`);
}

/** The generation the host last served `profileId` at, or undefined (no marker, or one that does not parse). */
export async function readPlacementMarker(profilesDir: string, profileId: string): Promise<number | undefined> {
  try {
    return PlacementMarker.parse(JSON.parse(await readFile(placementMarkerPath(profilesDir, profileId), 'utf8'))).generation;
  } catch {
    return undefined;
  }
}

/** Writes the placement marker of `profileId` (through a temporary file and a rename). */
export async function writePlacementMarker(profilesDir: string, profileId: string, generation: number): Promise<void> {
  const file = placementMarkerPath(profilesDir, profileId);
  await writeAtomically(file, `${JSON.stringify({ generation, written_at_ms: Date.now() })}\n`);
}

/** What preparing a profile's directory for a placement did. */
export interface PreparedProfile {
  /** The placement generation the directory now belongs to. */
  readonly generation: number;
  /** What the lease that launched the browser reports (shared/fleet.ts `RestoreReport`). */
  readonly report: RestoreReport;
  /** The restored storage state (cookies, session cookies too, and local storage) to put back once Chromium runs; undefined when nothing was restored. */
  readonly storage: RestoredStorage | undefined;
}

/** The profile being prepared, its placement, and where snapshots come from. */
export interface PrepareOptions {
  readonly profilesDir: string;
  readonly profileId: string;
  readonly grant: PlacementGrant;
  /** The edge's snapshot endpoints; undefined (no `HOST_EDGE_URL`): every snapshot is refused. */
  readonly edge: EdgeSnapshots | undefined;
}

/**
 * Makes `<profilesDir>/<profileId>` the directory of placement `grant` before Chromium starts on
 * it (see the rules above): kept, restored from the newest of `grant.restore` that passes (a
 * refused one is reported with its reason and the next older one tried), or started empty. The
 * account seal (site-verification/seal.ts) is the restored snapshot's, or none when the snapshot
 * had none; kept when nothing was restored. The marker is written last.
 * Nothing may run on the directory meanwhile (admission launches a profile's browser only after
 * its earlier one exited).
 * @throws Error when the host's own disk fails (the directory is then the old one or absent, and
 *   the marker unchanged).
 */
export async function prepareProfileDirectory(deadline: Deadline, options: PrepareOptions): Promise<PreparedProfile> {
  const { profilesDir, profileId, grant } = options;
  await mkdir(profilesDir, { recursive: true, mode: 0o700 });
  const marker = await readPlacementMarker(profilesDir, profileId);
  if (marker === grant.generation || (marker === undefined && grant.restore.length === 0)) {
    if (marker === undefined) await writePlacementMarker(profilesDir, profileId, grant.generation);
    return { generation: grant.generation, report: { restored_version: null, refused: [] }, storage: undefined };
  }
  const refused: RefusedSnapshot[] = [];
  for (const ref of grant.restore) {
    const staging = await mkdtemp(path.join(profilesDir, `${STAGING_PREFIX}${profileId}-`));
    try {
      if (options.edge === undefined) throw new SnapshotRefusal('this host has no HOST_EDGE_URL to download it from');
      const sealed = await downloadSnapshot(deadline, options.edge, profileId, ref);
      const unpacked = await unpackProfile(openSnapshot(sealed, grant.snapshot_key, profileId), staging);
      await swapIn(profilesDir, profileId, unpacked.userDataDir);
      await replaceAccountSeal(profilesDir, profileId, unpacked.accountSeal);
      await writePlacementMarker(profilesDir, profileId, grant.generation);
      return { generation: grant.generation, report: { restored_version: ref.version, refused }, storage: unpacked.storage };
    } catch (error) {
      if (!(error instanceof SnapshotRefusal)) throw error;
      refused.push({ version: ref.version, reason: boundedReason(error.message) });
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
  // Nothing to restore, or nothing that passed: the profile starts empty (its seal is kept: an
  // account bound to it before stays bound, failing closed).
  const staging = await mkdtemp(path.join(profilesDir, `${STAGING_PREFIX}${profileId}-`));
  try {
    const empty = path.join(staging, 'user-data');
    await mkdir(empty, { mode: 0o700 });
    await swapIn(profilesDir, profileId, empty);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  await writePlacementMarker(profilesDir, profileId, grant.generation);
  return { generation: grant.generation, report: { restored_version: null, refused }, storage: undefined };
}

/**
 * Removes what an interrupted restore left in `profilesDir` (staging and replaced directories).
 * Call it before any browser starts. Never throws.
 */
export async function removeRestoreLeftovers(profilesDir: string): Promise<void> {
  const names = await readdir(profilesDir).catch(() => [] as string[]);
  for (const name of names) {
    if (name.startsWith(STAGING_PREFIX) || name.startsWith(REPLACED_PREFIX))
      await rm(path.join(profilesDir, name), { recursive: true, force: true }).catch(() => {});
  }
}

/** Puts directory `fresh` (inside `profilesDir`) in the place of the profile's directory. */
async function swapIn(profilesDir: string, profileId: string, fresh: string): Promise<void> {
  const target = path.join(profilesDir, profileId);
  const replaced = path.join(profilesDir, `${REPLACED_PREFIX}${profileId}-${randomBytes(6).toString('hex')}`);
  let moved = false;
  try {
    await rename(target, replaced);
    moved = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  try {
    await rename(fresh, target);
  } catch (error) {
    if (moved) await rename(replaced, target).catch(() => {});
    throw error;
  }
  if (moved) await rm(replaced, { recursive: true, force: true });
}

/** Makes the profile's account seal `text`, or removes it when undefined. */
async function replaceAccountSeal(profilesDir: string, profileId: string, text: string | undefined): Promise<void> {
  const file = sealPath(profilesDir, profileId);
  if (text === undefined) await rm(file, { force: true });
  else await writeAtomically(file, text);
}

async function writeAtomically(file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, text, { mode: 0o600 });
  await rename(temporary, file);
}
