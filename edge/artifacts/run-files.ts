import { and, asc, count, eq, lt, notInArray, sql } from 'drizzle-orm';
import type { TargetFile } from '../../shared/act-target.ts';
import { TERMINAL_RUN_STATES } from '../../shared/api.ts';
import type { UploadFile } from '../../shared/protocol.ts';
import { type AttachFileBody, MAX_RUN_FILE_BYTES, MAX_RUN_FILES, type RunFileView } from '../../shared/run-files.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { selectedRow } from '../db/insert-select.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type RunFileRow, type RunRow, runFiles, runs } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { type ArtifactKey, runFileKey } from './artifact-store.ts';
import { base64OfBytes, bytesOfBase64, sha256OfBytes } from './bytes.ts';
import { removeStoredRows } from './stored-removal.ts';

/** Most files one retention pass removes. */
const PRUNE_BATCH = 256;

/** The API view of a file row. */
export function runFileView(row: RunFileRow): RunFileView {
  return { id: row.id, run_id: row.runId, name: row.name, mime_type: row.mimeType, bytes: row.bytes, sha256: row.sha256, created_at: iso(row.createdAt) };
}

/**
 * Attaches a file to `run` for upload acts (issue 33): the bytes go to the artifact store, then
 * the row, written only while the run has fewer than {@link MAX_RUN_FILES} files and is not
 * finished (one conditional insert; an object left without its row is removed again).
 * @throws DomainError('forbidden') for a principal that is not the run's owner;
 *   DomainError('file_too_large') past {@link MAX_RUN_FILE_BYTES} decoded;
 *   DomainError('run_not_active') for a finished run; DomainError('too_many_files') when the
 *   run has {@link MAX_RUN_FILES} already. Nothing is kept when it throws.
 */
export async function attachFile(ports: Ports, principal: Principal, run: RunRow, body: AttachFileBody): Promise<RunFileRow> {
  if (principal.kind !== 'owner' || principal.ownerId !== run.ownerId) throw new DomainError('forbidden', "only the run's owner attaches files to it");
  const bytes = bytesOfBase64(body.data_base64);
  if (bytes.byteLength > MAX_RUN_FILE_BYTES) {
    throw new DomainError('file_too_large', `the file is ${bytes.byteLength} bytes; a run's files are at most ${MAX_RUN_FILE_BYTES} bytes`);
  }
  await assertRoomFor(ports, run);
  const row: RunFileRow = {
    id: newId('file'),
    ownerId: run.ownerId,
    runId: run.id,
    name: body.name,
    mimeType: body.mime_type,
    bytes: bytes.byteLength,
    sha256: await sha256OfBytes(bytes),
    storeKey: '',
    createdAt: ports.clock.now(),
  };
  row.storeKey = runFileKey(run.ownerId, run.id, row.id);
  await ports.artifacts.put(row.storeKey as ArtifactKey, bytes, row.mimeType);
  const filesOfRun = ports.db.select({ n: count() }).from(runFiles).where(eq(runFiles.runId, run.id));
  const inserted = await ports.db
    .insert(runFiles)
    .select((qb) =>
      qb
        .select(selectedRow(runFiles, row))
        .from(runs)
        .where(and(eq(runs.id, run.id), notInArray(runs.state, [...TERMINAL_RUN_STATES]), sql`(${filesOfRun}) < ${MAX_RUN_FILES}`))
        .getSQL(),
    )
    .run();
  if (rowsChanged(inserted) === 1) return row;
  await ports.artifacts.delete([row.storeKey as ArtifactKey]);
  // Another attach took the last place, or the run ended meanwhile: say which.
  await assertRoomFor(ports, run);
  throw new DomainError('too_many_files', `a run has at most ${MAX_RUN_FILES} files`);
}

/** @throws DomainError('run_not_active' | 'too_many_files') when the run cannot take another file now. */
async function assertRoomFor(ports: Ports, run: RunRow): Promise<void> {
  const [current, files] = await ports.db.batch([
    ports.db.select({ state: runs.state }).from(runs).where(eq(runs.id, run.id)),
    ports.db.select({ n: count() }).from(runFiles).where(eq(runFiles.runId, run.id)),
  ]);
  const state = current[0]?.state ?? run.state;
  if (TERMINAL_RUN_STATES.includes(state)) throw new DomainError('run_not_active', `the run is ${state}; files are attached only to a run not yet finished`);
  if ((files[0]?.n ?? 0) >= MAX_RUN_FILES) {
    throw new DomainError('too_many_files', `the run has ${MAX_RUN_FILES} files already, the most a run has; remove one first`);
  }
}

/** The files attached to `run`, oldest first. */
export async function filesOfRun(ports: Ports, runId: string): Promise<RunFileRow[]> {
  return ports.db.select().from(runFiles).where(eq(runFiles.runId, runId)).orderBy(asc(runFiles.createdAt), asc(runFiles.id));
}

/**
 * Removes file `fileId` of `run`: the object first, then the row (a failure leaves the row, to
 * try again, never an orphaned object); of removals racing, only the one that deleted the row
 * answers with it. A pending upload naming it then fails `invalid_arguments`
 * at dispatch, before anything is sent.
 * @throws DomainError('forbidden') for a principal that is not the run's owner;
 *   DomainError('not_found') for a file this run does not have.
 */
export async function removeFile(ports: Ports, principal: Principal, run: RunRow, fileId: string): Promise<RunFileRow> {
  if (principal.kind !== 'owner' || principal.ownerId !== run.ownerId) throw new DomainError('forbidden', "only the run's owner removes its files");
  const row = await attachedFile(ports, run.id, fileId);
  if (row === undefined) throw new DomainError('not_found', `run ${run.id} has no file ${fileId}`);
  await ports.artifacts.delete([row.storeKey as ArtifactKey]);
  const deleted = await ports.db.delete(runFiles).where(and(eq(runFiles.id, row.id), eq(runFiles.runId, run.id)));
  // Another removal of the same file came first: it removed it, this one did not.
  if (rowsChanged(deleted) !== 1) throw new DomainError('not_found', `run ${run.id} has no file ${fileId}`);
  return row;
}

/** File `fileId` if `runId` has it (another run's file is not this run's: undefined). */
export async function attachedFile(ports: Ports, runId: string, fileId: string): Promise<RunFileRow | undefined> {
  return ports.db
    .select()
    .from(runFiles)
    .where(and(eq(runFiles.id, fileId), eq(runFiles.runId, runId)))
    .get();
}

/** What the owner is shown of an attached file in an upload's approval: id, name, size in bytes, type. */
export function targetFileOf(row: RunFileRow): TargetFile {
  return { id: row.id, name: row.name, bytes: row.bytes, mime_type: row.mimeType };
}

/**
 * The attached file an upload sets, as the host receives it (`page.act` `file`): name, type and
 * bytes read from the store; undefined when the run no longer has it (removed, or gone by age).
 */
export async function uploadFileOf(ports: Ports, runId: string, fileId: string): Promise<UploadFile | undefined> {
  const row = await attachedFile(ports, runId, fileId);
  const stored = row === undefined ? null : await ports.artifacts.get(row.storeKey as ArtifactKey);
  if (row === undefined || stored === null) return undefined;
  return { file_id: row.id, name: row.name, mime_type: row.mimeType, data_base64: base64OfBytes(stored.bytes) };
}

/**
 * The retention pass for run files (the cron trigger): removes files attached before `now` less
 * `ARTIFACT_MAX_AGE_HOURS`, oldest first, at most 256 per pass, objects before rows.
 * @returns how many it removed.
 */
export async function pruneRunFiles(ports: Ports, now: number): Promise<number> {
  const expired = await ports.db
    .select({ id: runFiles.id, storeKey: runFiles.storeKey })
    .from(runFiles)
    .where(lt(runFiles.createdAt, now - ports.config.artifactMaxAgeMs))
    .orderBy(asc(runFiles.createdAt))
    .limit(PRUNE_BATCH);
  return removeStoredRows(ports, runFiles, expired);
}
