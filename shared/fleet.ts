import { base64url, jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import { MIN_SHARED_SECRET_BYTES } from './wire-auth.ts';

/**
 * A fleet of browser hosts (issue 32): how a profile's placement and its snapshots travel
 * between the edge and the host that serves the profile.
 *
 * - The edge places a profile on one host at a time. The placement carries a fencing
 *   `generation` that grows by one each time the profile moves (DESIGN.md section 6, "one writer
 *   per profile"). The edge hands it to the host with `lease.acquire` and `ceremony.begin` as a
 *   {@link PlacementGrant}: the generation, the profile's snapshot key and the snapshots the host
 *   may restore from, newest first.
 * - The host writes a snapshot of the profile (its user-data directory without caches and locks,
 *   plus Playwright's storage state, sealed with AES-256-GCM under the snapshot key) whenever a
 *   hold on the profile ends and every few minutes during a long one. It PUTs the sealed bytes to
 *   the edge ({@link snapshotUploadPath}) with a token ({@link signSnapshotUpload}) naming the
 *   generation and the bytes' SHA-256. The edge keeps them (its artifact store) only while that
 *   generation is the placement's current one, else answers 409 `stale_generation`, and the
 *   host then closes its browser of that profile.
 * - Restoring, the host GETs a snapshot ({@link snapshotDownloadPath}, token
 *   {@link signSnapshotDownload}), checks its SHA-256 against the grant's digest, opens the seal
 *   and unpacks it into a fresh directory before Chromium starts; a snapshot that fails any check
 *   is refused and the next older one is tried, so nothing is half-restored.
 *
 * Tokens are HS256 over the host's shared secret (`HOST_SHARED_SECRET`), with their own `typ` and
 * audience, so neither passes as a wire or ceremony token. The snapshot key is never derived on a
 * host: the edge derives one per profile from its own secret and hands a host only the keys of
 * the profiles placed on it.
 */

/** Largest snapshot the edge accepts, in bytes of sealed archive. */
export const MAX_SNAPSHOT_BYTES = 32 * 1024 * 1024;
/** Most snapshots of a profile the edge keeps (and offers a host to restore from), newest first. */
export const SNAPSHOTS_KEPT = 3;
/** Lifetime of a snapshot token, in seconds. */
export const SNAPSHOT_TOKEN_TTL_S = 120;
const CLOCK_TOLERANCE_S = 5;

/** SHA-256 of a sealed snapshot, lowercase hex. */
export const SnapshotDigest = z.string().regex(/^[0-9a-f]{64}$/, 'SHA-256, 64 lowercase hex digits');
/** A profile's snapshot key: 32 random-looking bytes, base64url without padding (43 characters). */
export const SnapshotKey = z.string().regex(/^[A-Za-z0-9_-]{43}$/, '32 bytes, base64url');

/** One stored snapshot of a profile: its version (1, 2, ... per profile), digest and size in bytes. */
export const SnapshotRef = z.strictObject({
  version: z.int().min(1),
  digest: SnapshotDigest,
  size_bytes: z.int().min(1).max(MAX_SNAPSHOT_BYTES),
});
export type SnapshotRef = z.infer<typeof SnapshotRef>;

/**
 * What the edge tells the host serving a profile, with `lease.acquire` and `ceremony.begin`: the
 * placement's fencing generation, the profile's snapshot key, and the snapshots to restore from
 * (newest first, at most {@link SNAPSHOTS_KEPT}; empty when the profile has none yet).
 *
 * The host keeps the profile's local directory only when it last served the profile at this same
 * generation (or, for a directory from before fleets, when there is nothing to restore);
 * otherwise it replaces the directory with the newest snapshot that passes its checks, or starts
 * the profile empty when none does.
 */
export const PlacementGrant = z.strictObject({
  generation: z.int().min(1),
  snapshot_key: SnapshotKey,
  restore: z.array(SnapshotRef).max(SNAPSHOTS_KEPT),
});
export type PlacementGrant = z.infer<typeof PlacementGrant>;

/** A snapshot the host refused to restore, and why in words (digest mismatch, seal broken, truncated archive, ...). */
export const RefusedSnapshot = z.strictObject({ version: z.int().min(1), reason: z.string().max(300) });
export type RefusedSnapshot = z.infer<typeof RefusedSnapshot>;

/**
 * What a host did with a {@link PlacementGrant} when it started the profile's browser: the version
 * it restored (null: it kept its own directory, or started empty) and the snapshots it refused.
 */
export const RestoreReport = z.strictObject({
  restored_version: z.int().min(1).nullable(),
  refused: z.array(RefusedSnapshot).max(SNAPSHOTS_KEPT),
});
export type RestoreReport = z.infer<typeof RestoreReport>;

/** The edge's answer to a snapshot upload: the version it was stored as. */
export const SnapshotReceipt = z.strictObject({ profile_id: z.string(), version: z.int().min(1), generation: z.int().min(1) });
export type SnapshotReceipt = z.infer<typeof SnapshotReceipt>;

/** `PUT` here: a host's snapshot of host profile `profileId` (body: the sealed bytes). */
export function snapshotUploadPath(profileId: string): string {
  return `/v1/host/snapshots/${encodeURIComponent(profileId)}`;
}

/** `GET` here: version `version` of host profile `profileId`'s snapshots (the sealed bytes). */
export function snapshotDownloadPath(profileId: string, version: number): string {
  return `/v1/host/snapshots/${encodeURIComponent(profileId)}/${version}`;
}

const UPLOAD = { typ: 'snapshot-upload', issuer: 'browser-host', audience: 'edge-snapshots' } as const;
const DOWNLOAD = { typ: 'snapshot-download', issuer: 'browser-host', audience: 'edge-snapshots' } as const;

/** What a snapshot upload token says: who sends which bytes of which profile, at which generation. */
export interface SnapshotUploadClaims {
  readonly hostId: string;
  readonly profileId: string;
  readonly generation: number;
  readonly digest: string;
  readonly sizeBytes: number;
}

/** What a snapshot download token says: which host asks for which version of which profile. */
export interface SnapshotDownloadClaims {
  readonly hostId: string;
  readonly profileId: string;
  readonly version: number;
}

function keyOf(secret: string): Uint8Array {
  const key = new TextEncoder().encode(secret);
  if (key.byteLength < MIN_SHARED_SECRET_BYTES) throw new Error(`HOST_SHARED_SECRET must be at least ${MIN_SHARED_SECRET_BYTES} bytes`);
  return key;
}

/** Signs an upload token (HS256, {@link SNAPSHOT_TOKEN_TTL_S} s). */
export async function signSnapshotUpload(secret: string, claims: SnapshotUploadClaims): Promise<string> {
  return new SignJWT({
    typ: UPLOAD.typ,
    host_id: claims.hostId,
    profile_id: claims.profileId,
    generation: claims.generation,
    digest: claims.digest,
    size_bytes: claims.sizeBytes,
  })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(UPLOAD.issuer)
    .setAudience(UPLOAD.audience)
    .setIssuedAt()
    .setExpirationTime(`${SNAPSHOT_TOKEN_TTL_S}s`)
    .sign(keyOf(secret));
}

/** The claims of a valid upload token, or undefined (wrong secret, expired, another kind of token, malformed). */
export async function verifySnapshotUpload(secret: string, token: string): Promise<SnapshotUploadClaims | undefined> {
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), {
      algorithms: ['HS256'],
      issuer: UPLOAD.issuer,
      audience: UPLOAD.audience,
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: ['exp', 'iat'],
    });
    const parsed = z
      .object({
        typ: z.literal(UPLOAD.typ),
        host_id: z.string().min(1).max(128),
        profile_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
        generation: z.int().min(1),
        digest: SnapshotDigest,
        size_bytes: z.int().min(1).max(MAX_SNAPSHOT_BYTES),
      })
      .safeParse(payload);
    if (!parsed.success) return undefined;
    const { host_id, profile_id, generation, digest, size_bytes } = parsed.data;
    return { hostId: host_id, profileId: profile_id, generation, digest, sizeBytes: size_bytes };
  } catch {
    return undefined;
  }
}

/** Signs a download token (HS256, {@link SNAPSHOT_TOKEN_TTL_S} s). */
export async function signSnapshotDownload(secret: string, claims: SnapshotDownloadClaims): Promise<string> {
  return new SignJWT({ typ: DOWNLOAD.typ, host_id: claims.hostId, profile_id: claims.profileId, version: claims.version })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(DOWNLOAD.issuer)
    .setAudience(DOWNLOAD.audience)
    .setIssuedAt()
    .setExpirationTime(`${SNAPSHOT_TOKEN_TTL_S}s`)
    .sign(keyOf(secret));
}

/** The claims of a valid download token, or undefined. */
export async function verifySnapshotDownload(secret: string, token: string): Promise<SnapshotDownloadClaims | undefined> {
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), {
      algorithms: ['HS256'],
      issuer: DOWNLOAD.issuer,
      audience: DOWNLOAD.audience,
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: ['exp', 'iat'],
    });
    const parsed = z
      .object({
        typ: z.literal(DOWNLOAD.typ),
        host_id: z.string().min(1).max(128),
        profile_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
        version: z.int().min(1),
      })
      .safeParse(payload);
    if (!parsed.success) return undefined;
    return { hostId: parsed.data.host_id, profileId: parsed.data.profile_id, version: parsed.data.version };
  } catch {
    return undefined;
  }
}

/**
 * The snapshot key of one profile: HKDF-SHA256 of the edge's snapshot secret,
 * salted with a fixed label, with the host profile id as info; 32 bytes, base64url. Every edge
 * with the same secret derives the same key, so a profile's snapshots open wherever it is placed.
 */
export async function deriveSnapshotKey(secret: string, hostProfileId: string): Promise<string> {
  const material = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), 'HKDF', false, ['deriveBits']);
  const bits = await crypto.subtle.deriveBits(
    { name: 'HKDF', hash: 'SHA-256', salt: new TextEncoder().encode('governed-browser/profile-snapshot/v1'), info: new TextEncoder().encode(hostProfileId) },
    material,
    256,
  );
  return base64url.encode(new Uint8Array(bits));
}

/** How the edge sees a registered host. */
export const HostState = z.enum(['healthy', 'unreachable', 'draining', 'drained']);
export type HostState = z.infer<typeof HostState>;
