import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { IdParam } from '../../../shared/api.ts';
import { AttachFileBody, MAX_RUN_FILE_BYTES, RunArtifactList, RunArtifactParam, RunFileList, RunFileParam, RunFileView } from '../../../shared/run-files.ts';
import { artifactsOfRun, runArtifact, runArtifactView } from '../../artifacts/run-artifacts.ts';
import { attachFile, filesOfRun, removeFile, runFileView } from '../../artifacts/run-files.ts';
import { DomainError } from '../../domain-error.ts';
import { loadRun } from '../../runs/lifecycle.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

const attach = createRoute({
  method: 'post',
  path: '/v1/runs/{id}/files',
  summary: `Attach a file to a run for upload acts (owner only; at most ${MAX_RUN_FILE_BYTES} bytes decoded, 8 files per run, while the run is not finished); an upload act names it by id`,
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { params: IdParam, body: jsonBody(AttachFileBody) },
  responses: {
    201: jsonResponse(RunFileView, 'the attached file'),
    ...errorResponses(...AUTH_ERRORS, 'not_found', 'file_too_large', 'too_many_files', 'run_not_active'),
  },
});

const listFiles = createRoute({
  method: 'get',
  path: '/v1/runs/{id}/files',
  summary: "A run's attached files, oldest first: id, name, type, size and SHA-256",
  security,
  middleware: [requirePrincipal('owner', 'agent')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(RunFileList, 'the files'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

const remove = createRoute({
  method: 'delete',
  path: '/v1/runs/{id}/files/{file_id}',
  summary: 'Remove an attached file (owner only); an upload naming it that waits for approval fails before anything is sent',
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { params: RunFileParam },
  responses: { 200: jsonResponse(RunFileView, 'the removed file'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

const listArtifacts = createRoute({
  method: 'get',
  path: '/v1/runs/{id}/artifacts',
  summary: "A run's artifacts, oldest first: the files its pages downloaded (never opened) and the screenshots its observations asked for",
  security,
  middleware: [requirePrincipal('owner', 'agent')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(RunArtifactList, 'the artifacts'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

const readArtifact = createRoute({
  method: 'get',
  path: '/v1/runs/{id}/artifacts/{artifact_id}',
  summary: "One artifact's bytes, as an attachment with its media type (never rendered by the edge)",
  security,
  middleware: [requirePrincipal('owner', 'agent')] as const,
  request: { params: RunArtifactParam },
  responses: {
    200: { description: 'the bytes', content: { 'application/octet-stream': { schema: z.string().meta({ format: 'binary' }) } } },
    ...errorResponses(...AUTH_ERRORS, 'not_found'),
  },
});

/**
 * `Content-Disposition: attachment` for `name`: an ASCII fallback (other characters as `_`) and
 * the exact name as RFC 8187 UTF-8.
 */
export function attachmentDisposition(name: string): string {
  const fallback = name.replace(/[^A-Za-z0-9._ -]/g, '_');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/**
 * A run's files and artifacts (issue 33). The owner attaches and removes files; the owner and
 * agents of the same owner list them and read artifacts. Another owner's run is `not_found`.
 * A file over the limit is `file_too_large` (413), with nothing stored.
 */
export const runFileRoutes = newRouter()
  .openapi(
    attach,
    async (c) => {
      const run = await loadRun(c.var.ports, c.var.principal, c.req.valid('param').id);
      return c.json(runFileView(await attachFile(c.var.ports, c.var.principal, run, c.req.valid('json'))), 201);
    },
    (result) => {
      if (!result.success) {
        // The base64 alone past its bound: the file is too large, not malformed.
        const tooLarge = result.error.issues.some((issue) => issue.code === 'too_big' && issue.path[0] === 'data_base64');
        if (tooLarge) throw new DomainError('file_too_large', `data_base64: a run's files are at most ${MAX_RUN_FILE_BYTES} bytes`);
        throw new DomainError('invalid_request', z.prettifyError(result.error));
      }
      return undefined;
    },
  )
  .openapi(listFiles, async (c) => {
    const run = await loadRun(c.var.ports, c.var.principal, c.req.valid('param').id);
    return c.json({ files: (await filesOfRun(c.var.ports, run.id)).map(runFileView) }, 200);
  })
  .openapi(remove, async (c) => {
    const { id, file_id: fileId } = c.req.valid('param');
    const run = await loadRun(c.var.ports, c.var.principal, id);
    return c.json(runFileView(await removeFile(c.var.ports, c.var.principal, run, fileId)), 200);
  })
  .openapi(listArtifacts, async (c) => {
    const run = await loadRun(c.var.ports, c.var.principal, c.req.valid('param').id);
    return c.json({ artifacts: (await artifactsOfRun(c.var.ports, run.id)).map(runArtifactView) }, 200);
  })
  .openapi(readArtifact, async (c) => {
    const { id, artifact_id: artifactId } = c.req.valid('param');
    const run = await loadRun(c.var.ports, c.var.principal, id);
    const found = await runArtifact(c.var.ports, run.id, artifactId);
    if (found === undefined) throw new DomainError('not_found', `run ${run.id} has no artifact ${artifactId} (it may have been removed by retention)`);
    return c.body(found.bytes as Uint8Array<ArrayBuffer>, 200, {
      'Content-Type': found.row.mimeType,
      'Content-Disposition': attachmentDisposition(found.row.name),
      'X-Content-Type-Options': 'nosniff',
      'Content-Security-Policy': 'sandbox',
      'Cache-Control': 'private, no-store',
    });
  });
