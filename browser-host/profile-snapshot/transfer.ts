import { z } from 'zod';
import {
  MAX_SNAPSHOT_BYTES,
  SnapshotReceipt,
  type SnapshotRef,
  signSnapshotDownload,
  signSnapshotUpload,
  snapshotDownloadPath,
  snapshotUploadPath,
} from '../../shared/fleet.ts';
import { Deadline } from '../deadline.ts';
import { firstLineOf } from '../host-error.ts';
import { SnapshotRefusal } from './refusal.ts';
import { snapshotDigest } from './seal.ts';

// How a host's profile snapshots travel to and from the edge's artifact store (shared/fleet.ts):
// PUT the sealed bytes with an upload token naming the placement's generation and the bytes'
// digest; GET a version back with a download token.

/** Where the edge is, and what this host signs its snapshot tokens with. */
export interface EdgeSnapshots {
  /** The edge's base URL (`HOST_EDGE_URL`), no trailing slash. */
  readonly edgeUrl: string;
  /** `HOST_SHARED_SECRET`: the tokens' HS256 key. */
  readonly sharedSecret: string;
  readonly hostId: string;
}

/** How an upload ended: stored as a version, refused for a stale generation, or failed. */
export type UploadOutcome =
  | { readonly kind: 'stored'; readonly receipt: SnapshotReceipt }
  | { readonly kind: 'stale'; readonly message: string }
  | { readonly kind: 'failed'; readonly reason: string };

/** Delays before each upload attempt, in ms: at most three attempts. */
export const UPLOAD_BACKOFF_MS: readonly number[] = [0, 1_000, 3_000];
/** Longest one upload attempt may take, in ms (up to 32 MiB of body). */
const UPLOAD_ATTEMPT_MS = 30_000;
/** Attempts at downloading one snapshot version (the second only after a network error or a 5xx). */
const DOWNLOAD_ATTEMPTS = 2;

/** The edge's error body (`{error: {code, message, request_id}}`), as far as a host reads it. */
const EdgeErrorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

/**
 * Uploads a sealed snapshot of `profileId`, written at placement generation `generation`:
 * `PUT <edgeUrl>/v1/host/snapshots/<profileId>`, `Authorization: Bearer <upload token>` (a fresh
 * token per attempt), `Content-Type: application/octet-stream`, the sealed bytes as body.
 * - 2xx with a {@link SnapshotReceipt}: `stored`;
 * - 409 with the error code `stale_generation`: `stale` (the placement moved on; never retried);
 * - 408, 429, 5xx, a network error or an attempt over 30 s: tried again after 1 s and 3 s;
 * - any other answer, or the last failed attempt: `failed`, with the status and the edge's message.
 * Stops (`failed`) when `stop` fires. Never throws.
 */
export async function uploadSnapshot(
  edge: EdgeSnapshots,
  profileId: string,
  generation: number,
  sealed: Uint8Array<ArrayBuffer>,
  stop: AbortSignal,
): Promise<UploadOutcome> {
  if (sealed.byteLength > MAX_SNAPSHOT_BYTES) return { kind: 'failed', reason: `${sealed.byteLength} bytes is over the edge's ${MAX_SNAPSHOT_BYTES}` };
  const digest = snapshotDigest(sealed);
  let reason = 'the host was stopping';
  for (const delayMs of UPLOAD_BACKOFF_MS) {
    if (!(await Deadline.pause(delayMs, stop))) break;
    const attempt = Deadline.after(UPLOAD_ATTEMPT_MS);
    try {
      const token = await signSnapshotUpload(edge.sharedSecret, { hostId: edge.hostId, profileId, generation, digest, sizeBytes: sealed.byteLength });
      const response = await fetch(`${edge.edgeUrl}${snapshotUploadPath(profileId)}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
        body: sealed,
        signal: AbortSignal.any([attempt.signal, stop]),
      });
      const text = await response.text();
      if (response.ok) {
        const receipt = SnapshotReceipt.safeParse(parseJson(text));
        if (receipt.success) return { kind: 'stored', receipt: receipt.data };
        return { kind: 'failed', reason: `the edge answered ${response.status} without a snapshot receipt` };
      }
      const error = EdgeErrorBody.safeParse(parseJson(text));
      reason = `the edge answered ${response.status}${error.success ? ` ${error.data.error.code}: ${error.data.error.message}` : ''}`;
      if (response.status === 409 && error.success && error.data.error.code === 'stale_generation') return { kind: 'stale', message: error.data.error.message };
      if (!retried(response.status)) return { kind: 'failed', reason };
    } catch (error) {
      reason = `the edge could not be reached: ${firstLineOf(error)}`;
    } finally {
      attempt.dispose();
    }
  }
  return { kind: 'failed', reason };
}

/**
 * Downloads version `ref.version` of `profileId`'s snapshots and checks it against the grant's
 * ref before anything opens it: `GET <edgeUrl>/v1/host/snapshots/<profileId>/<version>` with a
 * download token; the body is read only up to `ref.size_bytes` (one byte more refuses it), then
 * its length and its SHA-256 must be the ref's. A network error or a 5xx is tried once more
 * while `deadline` lasts.
 * @returns the sealed bytes, exactly `ref.size_bytes` long, with the ref's digest.
 * @throws SnapshotRefusal naming why: the edge's status (404: not stored; 409: refused, with its
 *   message), unreachable or out of time, longer or shorter (truncated) than the ref, or a
 *   digest that is not the ref's.
 */
export async function downloadSnapshot(deadline: Deadline, edge: EdgeSnapshots, profileId: string, ref: SnapshotRef): Promise<Uint8Array> {
  let refusal = new SnapshotRefusal('no time was left to download it');
  for (let attempt = 0; attempt < DOWNLOAD_ATTEMPTS && !deadline.expired; attempt++) {
    try {
      const token = await signSnapshotDownload(edge.sharedSecret, { hostId: edge.hostId, profileId, version: ref.version });
      const response = await fetch(`${edge.edgeUrl}${snapshotDownloadPath(profileId, ref.version)}`, {
        headers: { authorization: `Bearer ${token}` },
        signal: deadline.signal,
      });
      if (!response.ok) {
        const error = EdgeErrorBody.safeParse(parseJson(await response.text().catch(() => '')));
        const detail = error.success ? `: ${error.data.error.code}: ${error.data.error.message}` : '';
        refusal = new SnapshotRefusal(
          response.status === 404 ? `the edge does not have it (404${detail})` : `the edge answered ${response.status} to its download${detail}`,
        );
        if (response.status < 500) throw refusal;
        continue;
      }
      return checked(await readAtMost(response, ref.size_bytes), ref);
    } catch (error) {
      if (error instanceof SnapshotRefusal) throw error;
      refusal = new SnapshotRefusal(`it could not be downloaded: ${deadline.expired ? 'the restore ran out of time' : firstLineOf(error)}`, { cause: error });
    }
  }
  throw refusal;
}

/** The body's bytes, reading at most `sizeBytes` + 1 of them. @throws SnapshotRefusal when there are more. */
async function readAtMost(response: Response, sizeBytes: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(sizeBytes);
  let length = 0;
  const reader = response.body?.getReader();
  if (reader === undefined) return bytes.subarray(0, 0);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (length + value.byteLength > sizeBytes) {
      await reader.cancel().catch(() => {});
      throw new SnapshotRefusal(`the edge served more than the grant's ${sizeBytes} bytes`);
    }
    bytes.set(value, length);
    length += value.byteLength;
  }
  return bytes.subarray(0, length);
}

/** `sealed` when its size and digest are the ref's. @throws SnapshotRefusal otherwise. */
function checked(sealed: Uint8Array, ref: SnapshotRef): Uint8Array {
  if (sealed.byteLength !== ref.size_bytes) {
    throw new SnapshotRefusal(`truncated: the edge served ${sealed.byteLength} of the grant's ${ref.size_bytes} bytes`);
  }
  const digest = snapshotDigest(sealed);
  if (digest !== ref.digest) {
    throw new SnapshotRefusal(`digest mismatch: the bytes' SHA-256 is ${digest.slice(0, 12)}…, the grant's ${ref.digest.slice(0, 12)}… (altered in storage)`);
  }
  return sealed;
}

function retried(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
