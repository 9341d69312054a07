import { eq } from 'drizzle-orm';
import { type Context, Hono } from 'hono';
import { html } from 'hono/html';
import { httpStatusOf } from '../../shared/errors.ts';
import { AttachFileBody, MAX_RUN_FILE_BYTES, MAX_RUN_FILES, MediaType } from '../../shared/run-files.ts';
import { base64OfBytes } from '../artifacts/bytes.ts';
import { artifactsOfRun, runArtifact } from '../artifacts/run-artifacts.ts';
import { attachFile, filesOfRun, removeFile } from '../artifacts/run-files.ts';
import type { Principal } from '../auth/principal.ts';
import { type RunRow, runs } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { attachmentDisposition } from '../http/routes/run-files.ts';
import type { Ports } from '../ports.ts';
import { layout, type Page } from './pages.ts';
import { type ConsoleEnv, requireCsrf } from './session-guard.ts';

/**
 * A run's files on its console page (issue 33): the files the owner attached (name, type, size,
 * a Remove button) with a form to attach another, and what the run's pages downloaded (name,
 * size, a link that saves it). The bytes are only ever served as attachments.
 */
export async function runFilesFragment(ports: Ports, run: RunRow, csrfToken: string): Promise<Page> {
  const [files, artifacts] = await Promise.all([filesOfRun(ports, run.id), artifactsOfRun(ports, run.id)]);
  const downloads = artifacts.filter((artifact) => artifact.kind === 'download');
  return html`<section aria-labelledby="files-heading"><h3 id="files-heading">Files for uploads</h3>
${
  files.length === 0
    ? html`<p class="empty">No files attached. An upload act can only set a file attached here.</p>`
    : html`<ul class="files">${files.map(
        (file) =>
          html`<li>${file.name} (${file.mimeType}, ${file.bytes} bytes) <form method="post" action="/console/runs/${run.id}/files/${file.id}/remove" class="inline"><input type="hidden" name="csrf" value="${csrfToken}"><button type="submit">Remove</button></form></li>`,
      )}</ul>`
}
<form method="post" action="/console/runs/${run.id}/files" enctype="multipart/form-data">
<input type="hidden" name="csrf" value="${csrfToken}">
<label>Attach a file (at most ${MAX_RUN_FILE_BYTES} bytes, ${MAX_RUN_FILES} files a run) <input type="file" name="file" required></label>
<button type="submit">Attach</button>
</form>
<h3>Downloads</h3>
${
  downloads.length === 0
    ? html`<p class="empty">The run's pages downloaded nothing.</p>`
    : html`<ul class="downloads">${downloads.map(
        (download) =>
          html`<li><a href="/console/runs/${run.id}/artifacts/${download.id}" download>${download.name}</a> (${download.mimeType}, ${download.bytes} bytes)</li>`,
      )}</ul>`
}</section>`;
}

/** The session's owner as the principal the services take. */
function ownerOf(c: Context<ConsoleEnv>): Principal {
  return { id: c.var.session.ownerId, kind: 'owner', ownerId: c.var.session.ownerId };
}

/** The session owner's run `id`. @throws DomainError('not_found') for another owner's or no run. */
async function ownRun(c: Context<ConsoleEnv>, id: string): Promise<RunRow> {
  const run = await c.var.ports.db.select().from(runs).where(eq(runs.id, id)).get();
  if (!run || run.ownerId !== c.var.session.ownerId) throw new DomainError('not_found', 'no such run');
  return run;
}

/** A refusal of a form as a console page that says why, with the code's status. */
function refusalPage(c: Context<ConsoleEnv>, runId: string, error: DomainError) {
  const page = layout('Not attached', html`<p role="alert">${error.message}</p><p><a href="/console/runs/${runId}">Back to the run</a></p>`, {
    csrfToken: c.var.session.csrfToken,
  });
  return c.html(page, httpStatusOf(error.code) as 400);
}

/** The form's file as the API's attach body: its name, its type (parameters dropped; unknown types as octet-stream) and bytes. */
async function attachBodyOf(file: File): Promise<AttachFileBody> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  if (bytes.byteLength > MAX_RUN_FILE_BYTES) throw new DomainError('file_too_large', `the file is ${bytes.byteLength} bytes; at most ${MAX_RUN_FILE_BYTES}`);
  const mimeType = MediaType.safeParse(file.type.split(';')[0]?.trim().toLowerCase()).data ?? 'application/octet-stream';
  const body = AttachFileBody.safeParse({ name: file.name, mime_type: mimeType, data_base64: base64OfBytes(bytes) });
  if (!body.success) throw new DomainError('invalid_request', 'the file needs a name without path separators, control or invisible format characters');
  return body.data;
}

/** The owner's forms and downloads of a run's files (behind the console session and CSRF checks). */
export const runFilesSection = new Hono<ConsoleEnv>()
  .post('/console/runs/:id/files', async (c) => {
    const runId = c.req.param('id');
    try {
      const form = await requireCsrf(c);
      const file = form.file;
      if (!(file instanceof File) || file.name === '') throw new DomainError('invalid_request', 'choose a file to attach');
      await attachFile(c.var.ports, ownerOf(c), await ownRun(c, runId), await attachBodyOf(file));
    } catch (error) {
      if (error instanceof DomainError && error.code !== 'forbidden') return refusalPage(c, runId, error);
      throw error;
    }
    return c.redirect(`/console/runs/${runId}`, 303);
  })
  .post('/console/runs/:id/files/:fileId/remove', async (c) => {
    await requireCsrf(c);
    const run = await ownRun(c, c.req.param('id'));
    await removeFile(c.var.ports, ownerOf(c), run, c.req.param('fileId'));
    return c.redirect(`/console/runs/${run.id}`, 303);
  })
  .get('/console/runs/:id/artifacts/:artifactId', async (c) => {
    const run = await ownRun(c, c.req.param('id'));
    const found = await runArtifact(c.var.ports, run.id, c.req.param('artifactId'));
    if (found === undefined) throw new DomainError('not_found', 'no such download (it may have been removed by retention)');
    return c.body(found.bytes as Uint8Array<ArrayBuffer>, 200, {
      'Content-Type': found.row.mimeType,
      'Content-Disposition': attachmentDisposition(found.row.name),
      'Content-Security-Policy': 'sandbox',
      'Cache-Control': 'private, no-store',
    });
  });
