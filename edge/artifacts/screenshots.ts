import { and, desc, eq, inArray, lt } from 'drizzle-orm';
import { PageScreenshot } from '../../shared/protocol.ts';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type ArtifactRow, artifacts } from '../db/schema.ts';
import { Deadline } from '../deadline.ts';
import { HostCallError, HostNoAnswer, type HostSession, HostUnreachable } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { type ArtifactKey, screenshotKey } from './artifact-store.ts';
import { removeStoredRows } from './stored-removal.ts';

/** Longest the edge waits for the host's screenshot, connection included, in ms. */
const SCREENSHOT_WAIT_MS = 6_000;
/** Most pictures one retention step removes. */
const PRUNE_BATCH = 256;
/** Most ids in one `IN (...)` list: D1 binds at most 100 parameters per statement. */
const IDS_PER_STATEMENT = 90;

/** Which picture of a call to keep, and where the host finds it. */
export interface ScreenshotRequest {
  readonly ownerId: string;
  readonly runId: string;
  readonly toolCallId: string;
  /** `after`: the page the call's act or navigation left; `parked`: the page when it parked, with the target's box. */
  readonly kind: ArtifactRow['kind'];
  readonly leaseId: string;
  /** The URL of the host holding the lease (the run's `lease_host_url`). */
  readonly hostUrl: string;
  /** The page revision to picture. */
  readonly revision: number;
  /** The act's target, whose box the picture carries (`parked` only). */
  readonly reference?: string;
}

/**
 * Fetches one screenshot from the host (`page.screenshot`, at most 6 s) and keeps it: the JPEG in
 * the artifact store, then its row (at most one per call and kind), then the owner's pictures
 * trimmed to `ARTIFACT_MAX_PER_OWNER`. Meant for {@link Ports.background}: it never delays an
 * answer. A host that cannot picture the page (the lease ended, the page moved on, screenshots
 * are off, it is unreachable) leaves the call without a picture, silently: the console says so.
 * @throws whatever the store or database throws (the background runner logs it).
 */
export async function keepScreenshot(ports: Ports, request: ScreenshotRequest): Promise<void> {
  const picture = await fetchScreenshot(ports, request);
  if (picture === undefined) return;
  const bytes = Uint8Array.from(atob(picture.jpeg_base64), (character) => character.charCodeAt(0));
  const id = newId('art');
  const key = screenshotKey(request.ownerId, request.runId, id);
  await ports.artifacts.put(key, bytes, 'image/jpeg');
  const inserted = await ports.db
    .insert(artifacts)
    .values({
      id,
      ownerId: request.ownerId,
      runId: request.runId,
      toolCallId: request.toolCallId,
      kind: request.kind,
      storeKey: key,
      bytes: bytes.byteLength,
      width: picture.width,
      height: picture.height,
      box: picture.box,
      createdAt: picture.taken_at_ms > 0 ? Math.min(picture.taken_at_ms, ports.clock.now()) : ports.clock.now(),
    })
    .onConflictDoNothing()
    .run();
  // The call already has this picture (a repeated task): the new object is not needed.
  if (rowsChanged(inserted) === 0) await ports.artifacts.delete([key]);
  await trimOwnerArtifacts(ports, request.ownerId);
}

/** The host's picture for `request`, or undefined when it has none to give. */
async function fetchScreenshot(ports: Ports, request: ScreenshotRequest): Promise<PageScreenshot | undefined> {
  const deadline = Deadline.after(ports.clock, SCREENSHOT_WAIT_MS);
  let session: HostSession | undefined;
  try {
    session = await ports.dial(request.hostUrl).connect(deadline.remaining());
    // The host's own timeout ends half a second before ours, so its typed answer arrives first.
    const timeoutMs = Math.max(100, deadline.remaining() - 500);
    const answer = await session.call(
      'page.screenshot',
      { lease_id: request.leaseId, revision: request.revision, timeout_ms: timeoutMs, ...(request.reference ? { reference: request.reference } : {}) },
      timeoutMs + 500,
    );
    const parsed = PageScreenshot.safeParse(answer);
    return parsed.success && parsed.data.revision === request.revision ? parsed.data : undefined;
  } catch (error) {
    if (error instanceof HostCallError || error instanceof HostNoAnswer || error instanceof HostUnreachable) return undefined;
    throw error;
  } finally {
    session?.close();
  }
}

/**
 * Removes the owner's pictures beyond the newest `ARTIFACT_MAX_PER_OWNER` (at most 256 per
 * call): objects first, then rows, so a failure leaves rows to retry, never orphaned objects.
 * @returns how many it removed.
 */
export async function trimOwnerArtifacts(ports: Ports, ownerId: string): Promise<number> {
  const surplus = await ports.db
    .select({ id: artifacts.id, storeKey: artifacts.storeKey })
    .from(artifacts)
    .where(eq(artifacts.ownerId, ownerId))
    .orderBy(desc(artifacts.createdAt), desc(artifacts.id))
    .limit(PRUNE_BATCH)
    .offset(ports.config.artifactMaxPerOwner);
  return removeStoredRows(ports, artifacts, surplus);
}

/**
 * The retention pass of the cron trigger: removes pictures older than `ARTIFACT_MAX_AGE_HOURS`
 * at `now` (epoch ms), oldest first, at most 256 per pass, objects before rows.
 * @returns how many it removed.
 */
export async function pruneArtifacts(ports: Ports, now: number): Promise<number> {
  const expired = await ports.db
    .select({ id: artifacts.id, storeKey: artifacts.storeKey })
    .from(artifacts)
    .where(lt(artifacts.createdAt, now - ports.config.artifactMaxAgeMs))
    .orderBy(artifacts.createdAt)
    .limit(PRUNE_BATCH);
  return removeStoredRows(ports, artifacts, expired);
}

/** `ids` in lists of at most {@link IDS_PER_STATEMENT}. */
function chunksOf(ids: readonly string[]): string[][] {
  const chunks: string[][] = [];
  for (let start = 0; start < ids.length; start += IDS_PER_STATEMENT) chunks.push(ids.slice(start, start + IDS_PER_STATEMENT));
  return chunks;
}

/** Pictures by call id and kind. */
export type PicturesByCall = Map<string, Partial<Record<ArtifactRow['kind'], ArtifactRow>>>;

function byCall(rows: readonly ArtifactRow[]): PicturesByCall {
  const pictures: PicturesByCall = new Map();
  for (const row of rows) pictures.set(row.toolCallId, { ...pictures.get(row.toolCallId), [row.kind]: row });
  return pictures;
}

/** The owner's pictures of `callIds` (the console's inbox), 90 ids per statement. */
export async function screenshotsOfCalls(ports: Ports, ownerId: string, callIds: readonly string[]): Promise<PicturesByCall> {
  const rows = await Promise.all(
    chunksOf([...new Set(callIds)]).map((chunk) =>
      ports.db
        .select()
        .from(artifacts)
        .where(and(eq(artifacts.ownerId, ownerId), inArray(artifacts.toolCallId, chunk))),
    ),
  );
  return byCall(rows.flat());
}

/** The owner's pictures of one run's calls (a run's timeline). */
export async function screenshotsOfRun(ports: Ports, ownerId: string, runId: string): Promise<PicturesByCall> {
  return byCall(
    await ports.db
      .select()
      .from(artifacts)
      .where(and(eq(artifacts.ownerId, ownerId), eq(artifacts.runId, runId))),
  );
}

/** One picture of the owner's, its row and bytes; undefined when it is not theirs or is gone. */
export async function ownerScreenshot(ports: Ports, ownerId: string, artifactId: string): Promise<{ row: ArtifactRow; bytes: Uint8Array } | undefined> {
  const row = await ports.db
    .select()
    .from(artifacts)
    .where(and(eq(artifacts.id, artifactId), eq(artifacts.ownerId, ownerId)))
    .get();
  if (!row) return undefined;
  const stored = await ports.artifacts.get(row.storeKey as ArtifactKey);
  return stored ? { row, bytes: stored.bytes } : undefined;
}
