import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  deriveSnapshotKey,
  MAX_SNAPSHOT_BYTES,
  type PlacementGrant,
  SNAPSHOTS_KEPT,
  type SnapshotReceipt,
  verifySnapshotDownload,
  verifySnapshotUpload,
} from '../../shared/fleet.ts';

/** One snapshot the sink stored. */
export interface StoredSnapshot {
  readonly version: number;
  /** The placement generation the host wrote it at. */
  readonly generation: number;
  readonly hostId: string;
  readonly bytes: Uint8Array;
  readonly digest: string;
  /** When the sink stored it: `performance.now()` of this process, in ms. */
  readonly storedAt: number;
}

/**
 * The edge's two snapshot endpoints (shared/fleet.ts) for host tests, with the edge's placement
 * generations kept in memory: what the e2e tests meet in the real edge, small enough to steer.
 */
export interface SnapshotSink {
  /** `http://127.0.0.1:<port>`: the hosts' `edgeUrl`. */
  readonly url: string;
  /**
   * Places a profile anew, as the edge does when it moves it: the next generation (1 for the
   * first), its snapshot key, and its stored snapshots newest first (at most {@link SNAPSHOTS_KEPT}).
   */
  place(profileId: string): Promise<PlacementGrant>;
  /** The profile's stored snapshots, oldest first. */
  stored(profileId: string): readonly StoredSnapshot[];
  /** Serves `bytes` for a stored version from now on (corrupted or truncated in storage); its ref keeps the stored digest and size. */
  serveInstead(profileId: string, version: number, bytes: Uint8Array): void;
  /** Uploads refused with 409 `stale_generation`, for the profile. */
  refusals(profileId: string): number;
  close(): Promise<void>;
}

/** The edge's snapshot secret in tests (the profiles' keys are derived from it, as {@link SnapshotSink.place} grants them). */
export const SINK_SNAPSHOT_SECRET = 'sink-snapshot-secret-of-at-least-32-bytes';

/**
 * Starts the sink on 127.0.0.1 (any free port), checking tokens with `sharedSecret` as the edge does:
 * - `PUT /v1/host/snapshots/<id>`: a valid upload token for `<id>` (else 401), a body of the
 *   token's size and digest (else 400), the profile's current generation (else 409
 *   `{error: {code: 'stale_generation', message}}`); stored as the next version, 201 with the receipt;
 * - `GET /v1/host/snapshots/<id>/<version>`: a valid download token for `<id>` and `<version>`
 *   (else 401); the bytes, or 404.
 */
export async function startSnapshotSink(sharedSecret: string): Promise<SnapshotSink> {
  const generations = new Map<string, number>();
  const snapshots = new Map<string, StoredSnapshot[]>();
  const served = new Map<string, Uint8Array>();
  const refusals = new Map<string, number>();

  const answer = (response: ServerResponse, status: number, body: unknown): void => {
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const refuse = (response: ServerResponse, status: number, code: string, message: string): void => answer(response, status, { error: { code, message } });
  const bearer = (request: IncomingMessage): string => /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? '';

  const upload = async (request: IncomingMessage, response: ServerResponse, profileId: string): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const claims = await verifySnapshotUpload(sharedSecret, bearer(request));
    if (claims === undefined || claims.profileId !== profileId) return refuse(response, 401, 'unauthorized', 'no valid upload token for this profile');
    const digest = createHash('sha256').update(body).digest('hex');
    if (body.byteLength !== claims.sizeBytes || digest !== claims.digest || body.byteLength > MAX_SNAPSHOT_BYTES) {
      return refuse(response, 400, 'invalid_arguments', 'the body is not the bytes the token names');
    }
    const current = generations.get(profileId);
    if (current !== claims.generation) {
      refusals.set(profileId, (refusals.get(profileId) ?? 0) + 1);
      return refuse(response, 409, 'stale_generation', `profile ${profileId} is placed at generation ${current ?? 'none'}, not ${claims.generation}`);
    }
    const list = snapshots.get(profileId) ?? [];
    const stored: StoredSnapshot = {
      version: list.length + 1,
      generation: claims.generation,
      hostId: claims.hostId,
      bytes: new Uint8Array(body),
      digest,
      storedAt: performance.now(),
    };
    snapshots.set(profileId, [...list, stored]);
    const receipt: SnapshotReceipt = { profile_id: profileId, version: stored.version, generation: stored.generation };
    answer(response, 201, receipt);
  };

  const download = async (request: IncomingMessage, response: ServerResponse, profileId: string, version: number): Promise<void> => {
    const claims = await verifySnapshotDownload(sharedSecret, bearer(request));
    if (claims === undefined || claims.profileId !== profileId || claims.version !== version) {
      return refuse(response, 401, 'unauthorized', 'no valid download token for this version');
    }
    const stored = snapshots.get(profileId)?.find((snapshot) => snapshot.version === version);
    if (stored === undefined) return refuse(response, 404, 'not_found', `profile ${profileId} has no snapshot version ${version}`);
    const bytes = served.get(`${profileId}/${version}`) ?? stored.bytes;
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(bytes.byteLength) }).end(bytes);
  };

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://sink');
    const match = /^\/v1\/host\/snapshots\/([A-Za-z0-9_-]{1,64})(?:\/(\d+))?$/.exec(url.pathname);
    const work =
      match?.[1] !== undefined && match[2] === undefined && request.method === 'PUT'
        ? upload(request, response, match[1])
        : match?.[1] !== undefined && match[2] !== undefined && request.method === 'GET'
          ? download(request, response, match[1], Number(match[2]))
          : Promise.resolve(refuse(response, 404, 'not_found', 'no such route'));
    work.catch((error: unknown) => refuse(response, 500, 'internal_error', String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    async place(profileId) {
      const generation = (generations.get(profileId) ?? 0) + 1;
      generations.set(profileId, generation);
      const restore = [...(snapshots.get(profileId) ?? [])]
        .reverse()
        .slice(0, SNAPSHOTS_KEPT)
        .map((snapshot) => ({ version: snapshot.version, digest: snapshot.digest, size_bytes: snapshot.bytes.byteLength }));
      return { generation, snapshot_key: await deriveSnapshotKey(SINK_SNAPSHOT_SECRET, profileId), restore };
    },
    stored: (profileId) => snapshots.get(profileId) ?? [],
    serveInstead: (profileId, version, bytes) => void served.set(`${profileId}/${version}`, bytes),
    refusals: (profileId) => refusals.get(profileId) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
