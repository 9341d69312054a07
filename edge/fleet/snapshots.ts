import { and, desc, eq, isNull, lt, sql } from 'drizzle-orm';
import type { RefusedSnapshot, SnapshotReceipt, SnapshotUploadClaims } from '../../shared/fleet.ts';
import { SNAPSHOTS_KEPT } from '../../shared/fleet.ts';
import { type ArtifactKey, isArtifactKey } from '../artifacts/artifact-store.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { hosts, profilePlacements, profileSnapshots } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';

/**
 * The profiles' snapshots at the edge (issue 32): sealed bytes a host uploads, kept in the
 * artifact store (R2 on Workers, files on Deno and Node) as versioned objects, recorded in
 * `profile_snapshots`. Only the host a profile is placed on may write its snapshot, and only at
 * the placement's current generation (the fencing token); only that host may read one back. The
 * edge never opens a snapshot: it has the bytes and their SHA-256, the host has the key.
 */

/**
 * A store key for version `version` of a host profile's snapshots, unique to this upload
 * (`v<version>-<16 random hex>.gbs`): two uploads racing for one version write two objects, so
 * the one whose row is not recorded removes only its own object, never the stored one.
 */
function snapshotKey(hostProfileId: string, version: number): ArtifactKey {
  const nonce = [...crypto.getRandomValues(new Uint8Array(8))].map((byte) => byte.toString(16).padStart(2, '0')).join('');
  const key = `snapshots/${hostProfileId}/v${version}-${nonce}.gbs`;
  if (!isArtifactKey(key)) throw new Error(`not an artifact key: ${key}`);
  return key;
}

/** SHA-256 of `bytes`, lowercase hex. */
async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  return [...digest].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * The placement `claims.profileId` must be at for the upload (or download) of host
 * `reportedHostId`: its current generation, on the registry host whose signed hello named that id.
 * @throws DomainError('stale_generation') when the profile is placed elsewhere or at another
 *   generation (a host declared unreachable that came back, a drained host late with its write).
 */
async function currentPlacementFor(ports: Ports, hostProfileId: string, reportedHostId: string, generation?: number) {
  const placement = await ports.db
    .select({ hostId: profilePlacements.hostId, generation: profilePlacements.generation, reportedHostId: hosts.reportedHostId })
    .from(profilePlacements)
    .leftJoin(hosts, eq(hosts.id, profilePlacements.hostId))
    .where(eq(profilePlacements.hostProfileId, hostProfileId))
    .get();
  if (!placement || placement.reportedHostId !== reportedHostId || (generation !== undefined && placement.generation !== generation)) {
    throw new DomainError(
      'stale_generation',
      placement
        ? `profile ${hostProfileId} is placed at generation ${placement.generation} on another host or generation; this host's copy is stale: close it`
        : `profile ${hostProfileId} is not placed anywhere; this host's copy is stale: close it`,
    );
  }
  return placement;
}

/**
 * Most attempts at taking a version number while other uploads of the same profile take them:
 * more than the host's own writes of one profile can race (one running, one retried after its
 * attempt timed out at the host while the edge still stored it).
 */
const VERSION_ATTEMPTS = 8;

/**
 * Stores a host's snapshot as the profile's next version, when the token's generation is the
 * placement's current one and the body is what the token says (size and SHA-256); then removes
 * versions beyond the newest {@link SNAPSHOTS_KEPT} (objects first, rows after). Uploads racing
 * for one version number are each stored, as consecutive versions: the loser of a race takes the
 * next number (its object written again under that number, the first one removed).
 * @throws DomainError('stale_generation') only when the placement is elsewhere or at another
 *   generation; DomainError('invalid_request') when the bytes do not match the token's size or
 *   digest; DomainError('rate_limited') when {@link VERSION_ATTEMPTS} races were all lost.
 */
export async function acceptSnapshot(ports: Ports, claims: SnapshotUploadClaims, bytes: Uint8Array): Promise<SnapshotReceipt> {
  if (bytes.byteLength !== claims.sizeBytes)
    throw new DomainError('invalid_request', `the snapshot has ${bytes.byteLength} bytes; its token says ${claims.sizeBytes}`);
  if ((await sha256Hex(bytes)) !== claims.digest) throw new DomainError('invalid_request', "the snapshot's SHA-256 is not the one its token names");
  const placement = await currentPlacementFor(ports, claims.profileId, claims.hostId, claims.generation);
  for (let attempt = 0; attempt < VERSION_ATTEMPTS; attempt++) {
    const version = await storedAsNextVersion(ports, claims, placement.hostId, bytes);
    if (version !== undefined) {
      await trimSnapshots(ports, claims.profileId, version);
      return { profile_id: claims.profileId, version, generation: claims.generation };
    }
    // Not recorded: the placement moved on (stale_generation), or another upload took the number.
    await currentPlacementFor(ports, claims.profileId, claims.hostId, claims.generation);
  }
  throw new DomainError('rate_limited', `snapshots of profile ${claims.profileId} are being stored faster than versions can be numbered; write again`);
}

/**
 * Writes `bytes` as the profile's next version and records its row, only while the placement is
 * still at the token's generation and the number is still free.
 * @returns the version, or undefined when the row was not recorded (its object removed again).
 */
async function storedAsNextVersion(ports: Ports, claims: SnapshotUploadClaims, hostId: string, bytes: Uint8Array): Promise<number | undefined> {
  const newest = await ports.db
    .select({ version: profileSnapshots.version })
    .from(profileSnapshots)
    .where(eq(profileSnapshots.hostProfileId, claims.profileId))
    .orderBy(desc(profileSnapshots.version))
    .get();
  const version = (newest?.version ?? 0) + 1;
  const storeKey = snapshotKey(claims.profileId, version);
  await ports.artifacts.put(storeKey, bytes, 'application/octet-stream');
  // Inserted only while the placement is still at this generation (it may have moved meanwhile)
  // and the version is still free (another upload of the same profile raced this one).
  const inserted = await ports.db
    .insert(profileSnapshots)
    .select((qb) =>
      qb
        .select({
          hostProfileId: sql`${claims.profileId}`.as('host_profile_id'),
          version: sql`${version}`.as('version'),
          generation: sql`${claims.generation}`.as('generation'),
          hostId: sql`${hostId}`.as('host_id'),
          storeKey: sql`${storeKey}`.as('store_key'),
          digest: sql`${claims.digest}`.as('digest'),
          sizeBytes: sql`${claims.sizeBytes}`.as('size_bytes'),
          refusedReason: sql`null`.as('refused_reason'),
          createdAt: sql`${ports.clock.now()}`.as('created_at'),
        })
        .from(profilePlacements)
        .where(and(eq(profilePlacements.hostProfileId, claims.profileId), eq(profilePlacements.generation, claims.generation))),
    )
    .onConflictDoNothing()
    .run();
  if (rowsChanged(inserted) === 1) return version;
  await ports.artifacts.delete([storeKey]);
  return undefined;
}

/**
 * The sealed bytes of version `version` of a profile's snapshots, for the host it is placed on.
 * @throws DomainError('stale_generation') for another host; DomainError('not_found') for a
 *   version that is not stored (removed, refused, never written).
 */
export async function readSnapshot(ports: Ports, request: { hostId: string; profileId: string; version: number }): Promise<Uint8Array> {
  await currentPlacementFor(ports, request.profileId, request.hostId);
  const row = await ports.db
    .select()
    .from(profileSnapshots)
    .where(and(eq(profileSnapshots.hostProfileId, request.profileId), eq(profileSnapshots.version, request.version), isNull(profileSnapshots.refusedReason)))
    .get();
  const stored = row ? await ports.artifacts.get(row.storeKey as ArtifactKey) : null;
  if (!row || !stored) throw new DomainError('not_found', `profile ${request.profileId} has no snapshot version ${request.version}`);
  return stored.bytes;
}

/** Records the snapshots a host refused to restore (never offered again), with its reasons. */
export async function recordRefusedSnapshots(ports: Ports, hostProfileId: string, refused: readonly RefusedSnapshot[]): Promise<void> {
  for (const snapshot of refused) {
    console.error(`profile ${hostProfileId}: snapshot version ${snapshot.version} was refused on restore: ${snapshot.reason}`);
    await ports.db
      .update(profileSnapshots)
      .set({ refusedReason: snapshot.reason.slice(0, 300) })
      .where(and(eq(profileSnapshots.hostProfileId, hostProfileId), eq(profileSnapshots.version, snapshot.version), isNull(profileSnapshots.refusedReason)));
  }
}

/** Removes a profile's versions older than the newest {@link SNAPSHOTS_KEPT} good ones: objects first, then rows. */
async function trimSnapshots(ports: Ports, hostProfileId: string, newest: number): Promise<void> {
  const kept = await ports.db
    .select({ version: profileSnapshots.version })
    .from(profileSnapshots)
    .where(and(eq(profileSnapshots.hostProfileId, hostProfileId), isNull(profileSnapshots.refusedReason)))
    .orderBy(desc(profileSnapshots.version))
    .limit(SNAPSHOTS_KEPT)
    .all();
  const oldestKept = kept.at(-1)?.version ?? newest;
  const surplus = await ports.db
    .select({ storeKey: profileSnapshots.storeKey })
    .from(profileSnapshots)
    .where(and(eq(profileSnapshots.hostProfileId, hostProfileId), lt(profileSnapshots.version, oldestKept)))
    .all();
  if (surplus.length === 0) return;
  await ports.artifacts.delete(surplus.map((row) => row.storeKey as ArtifactKey));
  const removed = await ports.db
    .delete(profileSnapshots)
    .where(and(eq(profileSnapshots.hostProfileId, hostProfileId), lt(profileSnapshots.version, oldestKept)))
    .run();
  if (rowsChanged(removed) !== surplus.length)
    console.error(`profile ${hostProfileId}: trimming snapshots removed ${rowsChanged(removed)} of ${surplus.length} rows`);
}
