import { and, asc, count, desc, eq, lt } from 'drizzle-orm';
import {
  MAX_RUN_DOWNLOADS,
  MAX_RUN_FILE_BYTES,
  MediaType,
  type ObservationScreenshot,
  type ObservedDownload,
  type RunArtifactView,
  type WireDownload,
  type WireScreenshot,
} from '../../shared/run-files.ts';
import { newId } from '../db/ids.ts';
import { type RunArtifactRow, type RunRow, runArtifacts } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { type Deadline, HOST_ANSWER_MARGIN_MS } from '../deadline.ts';
import type { HostSession } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { type ArtifactKey, runArtifactKey } from './artifact-store.ts';
import { bytesOfBase64 } from './bytes.ts';
import { removeStoredRows } from './stored-removal.ts';

/** Most artifacts one retention step removes. */
const PRUNE_BATCH = 256;
/** Most artifacts a run's listing shows: the oldest (a run keeps at most 16 downloads; screenshots go by the owner's count). */
export const RUN_ARTIFACTS_LISTED = 500;
/** Longest one `page.download` may take, in ms (a 2 MiB frame on a slow link). */
const DOWNLOAD_READ_MS = 10_000;

/** The API view of an artifact row. */
export function runArtifactView(row: RunArtifactRow): RunArtifactView {
  return {
    id: row.id,
    run_id: row.runId,
    kind: row.kind,
    call_id: row.toolCallId,
    name: row.name,
    mime_type: row.mimeType,
    bytes: row.bytes,
    created_at: iso(row.createdAt),
  };
}

/** Where a run's artifact comes from: the run and the call whose answer brought it. */
export interface ArtifactSource {
  readonly run: RunRow;
  readonly toolCallId: string;
}

/**
 * Keeps an observation's viewport screenshot (1.5.0 `observe {screenshot: true}`) as a run
 * artifact: the JPEG in the store, then its row. Never opens the picture.
 * @param revision the page revision it shows (its artifact's name says it).
 * @returns what the observation carries, or undefined when it could not be kept (logged; the
 *   observation then has no screenshot rather than failing the call).
 */
export async function keepObservationScreenshot(
  ports: Ports,
  source: ArtifactSource,
  wire: WireScreenshot,
  revision: number,
): Promise<ObservationScreenshot | undefined> {
  try {
    const bytes = bytesOfBase64(wire.data_base64);
    const row = await keepArtifact(ports, source, 'observation_screenshot', `page-revision-${revision}.jpg`, 'image/jpeg', bytes, wire);
    return { artifact_id: row.id, mime_type: 'image/jpeg', width: wire.width, height: wire.height, bytes: row.bytes };
  } catch (error) {
    console.error(`[${ports.requestId}] the screenshot of call ${source.toolCallId} was not kept`, error);
    return undefined;
  }
}

/**
 * Reads each download the host reported `saved` (`page.download` on the dispatch's own session
 * and lease, within `deadline`) into the run's artifacts, at most {@link MAX_RUN_DOWNLOADS} per
 * run (later ones are `not_kept` and are not read). The bytes are stored as they are, never
 * opened. A download the host could not give, or the store could not keep, is `failed`.
 * @returns the downloads as the observation reports them, in the host's order.
 */
export async function keepDownloads(
  ports: Ports,
  source: ArtifactSource,
  reach: { readonly session: HostSession; readonly leaseId: string; readonly deadline: Deadline },
  wire: readonly WireDownload[],
): Promise<ObservedDownload[]> {
  const kept = await ports.db
    .select({ n: count() })
    .from(runArtifacts)
    .where(and(eq(runArtifacts.runId, source.run.id), eq(runArtifacts.kind, 'download')))
    .get();
  let room = MAX_RUN_DOWNLOADS - (kept?.n ?? 0);
  const observed: ObservedDownload[] = [];
  for (const download of wire) {
    const shown = { file_name: download.file_name, ...(download.mime_type ? { mime_type: download.mime_type } : {}), bytes: download.bytes };
    if (download.state !== 'saved') {
      observed.push({ ...shown, state: download.state });
      continue;
    }
    if (room <= 0) {
      observed.push({ ...shown, state: 'not_kept' });
      continue;
    }
    observed.push(await readDownload(ports, source, reach, download));
    if (observed.at(-1)?.state === 'saved') room--;
  }
  return observed;
}

/** One saved download read from the host and kept; `failed` when that cannot be done. */
async function readDownload(
  ports: Ports,
  source: ArtifactSource,
  reach: { readonly session: HostSession; readonly leaseId: string; readonly deadline: Deadline },
  download: WireDownload,
): Promise<ObservedDownload> {
  const shown = { file_name: download.file_name, ...(download.mime_type ? { mime_type: download.mime_type } : {}), bytes: download.bytes };
  try {
    // The host's own timeout ends a margin before ours, so its typed answer arrives first.
    const waitMs = reach.deadline.upTo(DOWNLOAD_READ_MS);
    const timeoutMs = waitMs - HOST_ANSWER_MARGIN_MS;
    if (timeoutMs < 100) return { ...shown, state: 'failed' };
    const answer = await reach.session.call('page.download', { lease_id: reach.leaseId, download_id: download.download_id, timeout_ms: timeoutMs }, waitMs);
    if (answer.state !== 'saved') return { ...shown, state: answer.state };
    const bytes = bytesOfBase64(answer.data_base64);
    if (bytes.byteLength > MAX_RUN_FILE_BYTES) return { ...shown, bytes: bytes.byteLength, state: 'too_large' };
    const mimeType = MediaType.safeParse(answer.mime_type ?? download.mime_type).data ?? 'application/octet-stream';
    const row = await keepArtifact(ports, source, 'download', download.file_name, mimeType, bytes);
    return { artifact_id: row.id, file_name: row.name, mime_type: row.mimeType, bytes: row.bytes, state: 'saved' };
  } catch (error) {
    console.error(`[${ports.requestId}] download ${download.download_id} of call ${source.toolCallId} was not kept`, error);
    return { ...shown, state: 'failed' };
  }
}

/** The object, then its row; the owner's screenshots past their count are trimmed after the answer. */
async function keepArtifact(
  ports: Ports,
  source: ArtifactSource,
  kind: RunArtifactRow['kind'],
  name: string,
  mimeType: string,
  bytes: Uint8Array,
  size?: { width: number; height: number },
): Promise<RunArtifactRow> {
  const id = newId('art');
  const row: RunArtifactRow = {
    id,
    ownerId: source.run.ownerId,
    runId: source.run.id,
    toolCallId: source.toolCallId,
    kind,
    name,
    mimeType,
    storeKey: runArtifactKey(kind, source.run.ownerId, source.run.id, id),
    bytes: bytes.byteLength,
    width: size?.width ?? null,
    height: size?.height ?? null,
    createdAt: ports.clock.now(),
  };
  await ports.artifacts.put(row.storeKey as ArtifactKey, bytes, mimeType);
  await ports.db.insert(runArtifacts).values(row);
  ports.background(`trim the artifacts of ${row.ownerId}`, () => trimOwnerRunArtifacts(ports, row.ownerId));
  return row;
}

/** The artifacts of run `runId`, oldest first, at most {@link RUN_ARTIFACTS_LISTED}. */
export async function artifactsOfRun(ports: Ports, runId: string): Promise<RunArtifactRow[]> {
  return ports.db
    .select()
    .from(runArtifacts)
    .where(eq(runArtifacts.runId, runId))
    .orderBy(asc(runArtifacts.createdAt), asc(runArtifacts.id))
    .limit(RUN_ARTIFACTS_LISTED);
}

/** Artifact `artifactId` of run `runId`, its row and bytes; undefined when the run has no such artifact or it is gone. */
export async function runArtifact(ports: Ports, runId: string, artifactId: string): Promise<{ row: RunArtifactRow; bytes: Uint8Array } | undefined> {
  const row = await ports.db
    .select()
    .from(runArtifacts)
    .where(and(eq(runArtifacts.id, artifactId), eq(runArtifacts.runId, runId)))
    .get();
  const stored = row === undefined ? null : await ports.artifacts.get(row.storeKey as ArtifactKey);
  return row === undefined || stored === null ? undefined : { row, bytes: stored.bytes };
}

/**
 * Removes the owner's observation screenshots beyond the newest `ARTIFACT_MAX_PER_OWNER` (at most
 * 256 per call), objects first, then rows. Downloads are not counted: a run keeps at most
 * {@link MAX_RUN_DOWNLOADS} and retention removes them by age, so an agent's screenshots never
 * evict what a page gave the owner.
 * @returns how many it removed.
 */
export async function trimOwnerRunArtifacts(ports: Ports, ownerId: string): Promise<number> {
  const surplus = await ports.db
    .select({ id: runArtifacts.id, storeKey: runArtifacts.storeKey })
    .from(runArtifacts)
    .where(and(eq(runArtifacts.ownerId, ownerId), eq(runArtifacts.kind, 'observation_screenshot')))
    .orderBy(desc(runArtifacts.createdAt), desc(runArtifacts.id))
    .limit(PRUNE_BATCH)
    .offset(ports.config.artifactMaxPerOwner);
  return removeStoredRows(ports, runArtifacts, surplus);
}

/**
 * The retention pass of the cron trigger for run artifacts: removes those older than
 * `ARTIFACT_MAX_AGE_HOURS` at `now` (epoch ms), oldest first, at most 256 per pass, objects
 * before rows.
 * @returns how many it removed.
 */
export async function pruneRunArtifacts(ports: Ports, now: number): Promise<number> {
  const expired = await ports.db
    .select({ id: runArtifacts.id, storeKey: runArtifacts.storeKey })
    .from(runArtifacts)
    .where(lt(runArtifacts.createdAt, now - ports.config.artifactMaxAgeMs))
    .orderBy(asc(runArtifacts.createdAt))
    .limit(PRUNE_BATCH);
  return removeStoredRows(ports, runArtifacts, expired);
}
