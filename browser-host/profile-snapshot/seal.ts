import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { SnapshotKey } from '../../shared/fleet.ts';
import { SnapshotRefusal } from './refusal.ts';

// The seal of a profile's snapshot (issue 32): AES-256-GCM under the profile's snapshot key
// (shared/fleet.ts `PlacementGrant.snapshot_key`, derived by the edge per profile), so the edge's
// artifact store holds only bytes it cannot read, and a snapshot altered there, or one of another
// profile, does not open.
//
// Layout: `GBPS` (4 bytes), format version 1 (1 byte), a fresh 12-byte IV, the ciphertext, the
// 16-byte tag. The magic, the version and the profile id are the cipher's additional data.

const MAGIC = Buffer.from('GBPS', 'ascii');
/** The seal's format version. */
export const SEAL_VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = MAGIC.byteLength + 1;
/** Bytes a seal adds to its archive. */
export const SEAL_OVERHEAD_BYTES = HEADER_BYTES + IV_BYTES + TAG_BYTES;

function keyBytes(snapshotKey: string): Buffer {
  if (!SnapshotKey.safeParse(snapshotKey).success) throw new Error('a snapshot key is 32 bytes, base64url (shared/fleet.ts SnapshotKey)');
  return Buffer.from(snapshotKey, 'base64url');
}

function additionalData(profileId: string): Buffer {
  return Buffer.concat([MAGIC, Buffer.of(SEAL_VERSION), Buffer.from(profileId, 'utf8')]);
}

/**
 * Seals `archive` for profile `profileId` under `snapshotKey` (base64url, 32 bytes) with a fresh
 * random IV.
 * @returns the sealed bytes (archive length + {@link SEAL_OVERHEAD_BYTES}).
 * @throws Error for a key that is not 32 bytes of base64url.
 */
export function sealSnapshot(archive: Uint8Array, snapshotKey: string, profileId: string): Uint8Array<ArrayBuffer> {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyBytes(snapshotKey), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(additionalData(profileId));
  const body = Buffer.concat([cipher.update(archive), cipher.final()]);
  return new Uint8Array(Buffer.concat([MAGIC, Buffer.of(SEAL_VERSION), iv, body, cipher.getAuthTag()]));
}

/**
 * Opens a seal made by {@link sealSnapshot} for `profileId` under `snapshotKey`: the header and
 * the tag are checked before any of the archive is returned.
 * @returns the archive's bytes.
 * @throws SnapshotRefusal when the bytes are not a seal of this format, or the tag does not
 *   check (altered or truncated bytes, another key, another profile's snapshot).
 */
export function openSnapshot(sealed: Uint8Array, snapshotKey: string, profileId: string): Uint8Array {
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (bytes.byteLength < SEAL_OVERHEAD_BYTES || !bytes.subarray(0, MAGIC.byteLength).equals(MAGIC)) {
    throw new SnapshotRefusal('not a sealed profile snapshot (no GBPS header)');
  }
  const version = bytes[MAGIC.byteLength];
  if (version !== SEAL_VERSION) throw new SnapshotRefusal(`sealed with format version ${version}; this host opens version ${SEAL_VERSION}`);
  const iv = bytes.subarray(HEADER_BYTES, HEADER_BYTES + IV_BYTES);
  const tag = bytes.subarray(bytes.byteLength - TAG_BYTES);
  const body = bytes.subarray(HEADER_BYTES + IV_BYTES, bytes.byteLength - TAG_BYTES);
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyBytes(snapshotKey), iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(additionalData(profileId));
    decipher.setAuthTag(tag);
    return new Uint8Array(Buffer.concat([decipher.update(body), decipher.final()]));
  } catch (error) {
    throw new SnapshotRefusal("the seal does not open: its bytes were altered, or it is not this profile's snapshot under this key", { cause: error });
  }
}

/** SHA-256 of sealed bytes, lowercase hex (shared/fleet.ts `SnapshotDigest`). */
export function snapshotDigest(sealed: Uint8Array): string {
  return createHash('sha256').update(sealed).digest('hex');
}
