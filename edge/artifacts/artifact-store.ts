/**
 * Where the owner's screenshots are kept (issue 15): an R2 bucket on Workers (the `ARTIFACTS`
 * binding; local R2 under `wrangler dev`), files under `.data/artifacts` on Deno and Node
 * (edge/self-hosted/file-artifact-store.ts). Keys are the edge's own (see {@link ArtifactKey}),
 * never anything a page or an agent chose. The database keeps what is stored (table
 * `artifacts`); the store only holds bytes.
 */
export interface ArtifactStore {
  /** Stores `bytes` under `key`, replacing what was there. */
  put(key: ArtifactKey, bytes: Uint8Array, contentType: string): Promise<void>;
  /** The object under `key`, or null when there is none (never stored, or removed). */
  get(key: ArtifactKey): Promise<StoredArtifact | null>;
  /** Removes the objects under `keys`; keys without an object are ignored. */
  delete(keys: readonly ArtifactKey[]): Promise<void>;
}

/** An object read back from an {@link ArtifactStore}. */
export interface StoredArtifact {
  readonly bytes: Uint8Array;
  readonly contentType: string;
}

/** A store key: `/`-separated segments of letters, digits, `_` and `-`, with a file extension. */
export type ArtifactKey = string & { readonly __artifactKey: unique symbol };

const KEY_PATTERN = /^(?:[A-Za-z0-9_-]{1,64}\/){0,4}[A-Za-z0-9_-]{1,64}\.[a-z]{2,4}$/;

/**
 * The key of a screenshot: `screenshots/<owner>/<run>/<artifact>.jpg`.
 * @throws Error when an id is not of the edge's own id alphabet (a bug, never input).
 */
export function screenshotKey(ownerId: string, runId: string, artifactId: string): ArtifactKey {
  const key = `screenshots/${ownerId}/${runId}/${artifactId}.jpg`;
  if (!KEY_PATTERN.test(key)) throw new Error(`not an artifact key: ${key}`);
  return key as ArtifactKey;
}

/**
 * The key of a file the owner attached to a run (issue 33): `files/<owner>/<run>/<file>.bin`.
 * The name the owner gave it is kept in the database only, never in the key.
 * @throws Error when an id is not of the edge's own id alphabet (a bug, never input).
 */
export function runFileKey(ownerId: string, runId: string, fileId: string): ArtifactKey {
  return checkedKey(`files/${ownerId}/${runId}/${fileId}.bin`);
}

/**
 * The key of a run's artifact (issue 33): a download the page made,
 * `downloads/<owner>/<run>/<artifact>.bin`, or an observation's screenshot,
 * `observations/<owner>/<run>/<artifact>.jpg`.
 * @throws Error when an id is not of the edge's own id alphabet (a bug, never input).
 */
export function runArtifactKey(kind: 'download' | 'observation_screenshot', ownerId: string, runId: string, artifactId: string): ArtifactKey {
  return checkedKey(kind === 'download' ? `downloads/${ownerId}/${runId}/${artifactId}.bin` : `observations/${ownerId}/${runId}/${artifactId}.jpg`);
}

function checkedKey(key: string): ArtifactKey {
  if (!KEY_PATTERN.test(key)) throw new Error(`not an artifact key: ${key}`);
  return key as ArtifactKey;
}

/** True for a key of the form {@link screenshotKey} writes (no `..`, no absolute paths). */
export function isArtifactKey(key: string): key is ArtifactKey {
  return KEY_PATTERN.test(key);
}

/** The part of Workers' `R2Bucket` the store uses. */
export interface R2BucketLike {
  put(key: string, value: Uint8Array, options: { httpMetadata: { contentType: string } }): Promise<unknown>;
  get(key: string): Promise<{ arrayBuffer(): Promise<ArrayBuffer>; httpMetadata?: { contentType?: string } } | null>;
  delete(keys: string[]): Promise<void>;
}

/** An {@link ArtifactStore} over an R2 bucket binding (deletes in chunks of 1,000, R2's limit). */
export function r2ArtifactStore(bucket: R2BucketLike): ArtifactStore {
  return {
    put: async (key, bytes, contentType) => {
      await bucket.put(key, bytes, { httpMetadata: { contentType } });
    },
    get: async (key) => {
      const object = await bucket.get(key);
      if (object === null) return null;
      return { bytes: new Uint8Array(await object.arrayBuffer()), contentType: object.httpMetadata?.contentType ?? 'application/octet-stream' };
    },
    delete: async (keys) => {
      for (let start = 0; start < keys.length; start += 1_000) await bucket.delete(keys.slice(start, start + 1_000));
    },
  };
}
