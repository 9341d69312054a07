import { z } from 'zod';

/**
 * Files of a run (issue 33): what the owner attaches for uploads, and what the page downloads.
 * Both are kept in the artifact store under the edge's own keys; neither is ever opened by the
 * edge or the host. An upload act names an attached file by id, never a path on the host.
 */

/** Largest file the owner may attach to a run, and largest download kept, in bytes (2 MiB: one wire frame carries it as base64). */
export const MAX_RUN_FILE_BYTES = 2 * 1024 * 1024;
/** Most files the owner may attach to one run. */
export const MAX_RUN_FILES = 8;
/** Most downloads one run keeps; later ones are reported `not_kept`. */
export const MAX_RUN_DOWNLOADS = 16;

/**
 * A character a file name shown to the owner never holds: a control character (C0, DEL, C1), an
 * invisible format character (bidirectional overrides and isolates, zero-width spaces and
 * joiners), a line or paragraph separator, or a lone surrogate. Each could make an approval read
 * other than what it names: `invoice\u202Efdp.exe` shows as "invoiceexe.pdf".
 */
export const UNSHOWN_CHARACTER = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

/** A file name as shown to the owner: no path separators, no {@link UNSHOWN_CHARACTER}, 1-255 characters. */
export const RunFileName = z
  .string()
  .min(1)
  .max(255)
  .refine((name) => !/[/\\]/.test(name) && !UNSHOWN_CHARACTER.test(name), 'a file name without path separators, control or invisible format characters')
  .refine((name) => name !== '.' && name !== '..', 'not a file name');

/** A media type such as `application/pdf` (lower-cased parameters not allowed). */
export const MediaType = z.string().regex(/^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,127}$/, 'a media type such as text/plain');

/** `POST /v1/runs/{id}/files` body: the file's name, type and bytes as base64 (at most {@link MAX_RUN_FILE_BYTES} decoded). */
export const AttachFileBody = z
  .strictObject({
    name: RunFileName,
    mime_type: MediaType,
    data_base64: z.base64().max(Math.ceil(MAX_RUN_FILE_BYTES / 3) * 4),
  })
  .meta({ examples: [{ name: 'invoice.pdf', mime_type: 'application/pdf', data_base64: 'JVBERi0xLjQK' }] });
export type AttachFileBody = z.infer<typeof AttachFileBody>;

/** A file the owner attached to a run: its id (what an upload act names), name, type, size in bytes and SHA-256 (hex). */
export const RunFileView = z.strictObject({
  id: z.string(),
  run_id: z.string(),
  name: z.string(),
  mime_type: z.string(),
  bytes: z.int().min(0),
  sha256: z.string(),
  created_at: z.string(),
});
export type RunFileView = z.infer<typeof RunFileView>;

/** The id the host gives a download until the edge has read it (`page.download`). */
export const DownloadId = z.string().regex(/^dl_[A-Za-z0-9_-]{8,64}$/);

/**
 * A download as the host reports it in an observation (wire only): its id, the name the page
 * suggested (cut to a safe file name), the type when the response named one, the size in bytes,
 * and whether it was kept (`saved`) or not (`too_large` over {@link MAX_RUN_FILE_BYTES}, `failed`).
 */
export const WireDownload = z.strictObject({
  download_id: DownloadId,
  file_name: RunFileName,
  mime_type: z.string().max(200).optional(),
  bytes: z.int().min(0),
  state: z.enum(['saved', 'too_large', 'failed']),
});
export type WireDownload = z.infer<typeof WireDownload>;

/**
 * A download as the agent and owner see it (observation `downloads`, 1.5.0): the artifact it was
 * kept as (absent when not kept), name, type, size in bytes and state (`saved`, `too_large`,
 * `failed`, `not_kept` past {@link MAX_RUN_DOWNLOADS}).
 */
export const ObservedDownload = z.strictObject({
  artifact_id: z.string().optional(),
  file_name: z.string(),
  mime_type: z.string().optional(),
  bytes: z.int().min(0),
  state: z.enum(['saved', 'too_large', 'failed', 'not_kept']),
});
export type ObservedDownload = z.infer<typeof ObservedDownload>;

/** Largest screenshot an observation carries, in bytes of JPEG. */
export const MAX_OBSERVATION_SCREENSHOT_BYTES = 1024 * 1024;

/**
 * The viewport screenshot an observation carries when asked (1.5.0), as the host sends it (wire
 * only): JPEG, `width` and `height` in CSS px (= its pixels), base64 at most 1 MiB decoded.
 */
export const WireScreenshot = z.strictObject({
  mime_type: z.literal('image/jpeg'),
  width: z.int().min(1).max(10_000),
  height: z.int().min(1).max(10_000),
  data_base64: z.base64().max(Math.ceil(MAX_OBSERVATION_SCREENSHOT_BYTES / 3) * 4),
});
export type WireScreenshot = z.infer<typeof WireScreenshot>;

/**
 * The screenshot as the agent sees it in an observation (1.5.0): the artifact the edge kept it as
 * (`GET /v1/runs/{run}/artifacts/{artifact_id}`; over MCP an image content block), type, size in
 * CSS px (= pixels: points are in these units) and bytes. It is page content, tainted like text.
 */
export const ObservationScreenshot = z.strictObject({
  artifact_id: z.string(),
  mime_type: z.literal('image/jpeg'),
  width: z.int().min(1),
  height: z.int().min(1),
  bytes: z.int().min(0),
});
export type ObservationScreenshot = z.infer<typeof ObservationScreenshot>;

/** A run's artifact as listed to its owner and agent (`GET /v1/runs/{id}/artifacts`): downloads and observation screenshots. */
export const RunArtifactView = z.strictObject({
  id: z.string(),
  run_id: z.string(),
  kind: z.enum(['download', 'observation_screenshot']),
  call_id: z.string().nullable(),
  name: z.string(),
  mime_type: z.string(),
  bytes: z.int().min(0),
  created_at: z.string(),
});
export type RunArtifactView = z.infer<typeof RunArtifactView>;

/** Largest request body that attaches a file, in bytes: the base64 of {@link MAX_RUN_FILE_BYTES} and room for the name, type and JSON or form framing. */
export const MAX_ATTACH_BODY_BYTES = Math.ceil(MAX_RUN_FILE_BYTES / 3) * 4 + 64 * 1024;

/** `GET /v1/runs/{id}/files`: the run's attached files, oldest first. */
export const RunFileList = z.strictObject({ files: z.array(RunFileView) });
export type RunFileList = z.infer<typeof RunFileList>;

/** `GET /v1/runs/{id}/artifacts`: the run's downloads and observation screenshots, oldest first (at most 500). */
export const RunArtifactList = z.strictObject({ artifacts: z.array(RunArtifactView) });
export type RunArtifactList = z.infer<typeof RunArtifactList>;

const pathId = (examples: string[]) => z.string().min(1).max(80).meta({ examples });

/** The run and file a path names (`/v1/runs/{id}/files/{file_id}`). */
export const RunFileParam = z.strictObject({ id: pathId(['run_k3v9dq2m7xw4ahz5ty6e']), file_id: pathId(['file_m7xw4ahz5ty6ek3v9dq2']) });

/** The run and artifact a path names (`/v1/runs/{id}/artifacts/{artifact_id}`). */
export const RunArtifactParam = z.strictObject({ id: pathId(['run_k3v9dq2m7xw4ahz5ty6e']), artifact_id: pathId(['art_5ty6ek3v9dq2m7xw4ahz']) });
