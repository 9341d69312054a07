import { swaggerUI } from '@hono/swagger-ui';
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { type ErrorBody, type ErrorCode, httpStatusOf } from '../shared/errors.ts';
import { MAX_SNAPSHOT_BYTES } from '../shared/fleet.ts';
import { MAX_ATTACH_BODY_BYTES } from '../shared/run-files.ts';
import { consoleRoutes } from './console/routes.ts';
import { DomainError } from './domain-error.ts';
import type { AppEnv } from './http/app-env.ts';
import { approvalRoutes } from './http/routes/approvals.ts';
import { grantRoutes } from './http/routes/grants.ts';
import { healthRoutes } from './http/routes/health.ts';
import { hostRoutes } from './http/routes/hosts.ts';
import { memoryRoutes } from './http/routes/memories.ts';
import { memoryEvidenceRoutes } from './http/routes/memory-evidence.ts';
import { metricsRoutes } from './http/routes/metrics.ts';
import { policyProfileRoutes } from './http/routes/policy-profiles.ts';
import { principalRoutes } from './http/routes/principals.ts';
import { recipeRoutes } from './http/routes/recipes.ts';
import { runFileRoutes } from './http/routes/run-files.ts';
import { runRoutes } from './http/routes/runs.ts';
import { scheduleRoutes } from './http/routes/schedules.ts';
import { signInRoutes } from './http/routes/sign-ins.ts';
import { toolCallRoutes } from './http/routes/tool-calls.ts';
import { webhookRoutes } from './http/routes/webhooks.ts';
import { mcpRoutes } from './mcp/routes.ts';
import { countRefusal } from './metrics/refusals.ts';
import type { Ports } from './ports.ts';

/** Path of the OpenAPI 3.1 document, generated from the zod route schemas. */
export const OPENAPI_PATH = '/v1/openapi.json';

/** Path of the interactive API reference (Swagger UI over {@link OPENAPI_PATH}). */
export const DOCS_PATH = '/docs';

/**
 * Where the API reference's script and style sheet are served from: static assets copied from
 * the npm package `swagger-ui-dist` into `public/` by scripts/setup.mjs (Workers serves them as
 * `[assets]`, the Deno and Node entries from the same directory). Nothing comes from a CDN.
 */
export const DOCS_ASSETS_PATH = '/docs/assets';

/** Largest request body the API accepts, in bytes (a host's profile snapshot excepted: `MAX_SNAPSHOT_BYTES`). */
export const MAX_BODY_BYTES = 256 * 1024;
/** Where hosts PUT profile snapshots (shared/fleet.ts `snapshotUploadPath`). */
const SNAPSHOTS_PATH_PREFIX = '/v1/host/snapshots/';
/** Where the owner attaches a file to a run: the API and the console's form. */
const ATTACH_PATH = /^\/(?:v1|console)\/runs\/[^/]+\/files$/;
/** Most bytes of a request body nobody read that are read and thrown away before answering. */
const MAX_DISCARDED_BYTES = 4 * 1024 * 1024;

/**
 * Reads and throws away what is left of a request body no route read (refused before its body:
 * unauthenticated, too large by its Content-Length), at most 4 MiB, then cancels the rest.
 * `wrangler dev`'s proxy answers 503 ("Your worker restarted mid-request") for a request whose
 * body the Worker never read (workerd issue 4660); no input may produce a 5xx. Never throws.
 */
async function discardUnreadBody(request: Request): Promise<void> {
  if (request.body === null || request.bodyUsed || request.body.locked) return;
  await discardRest(request.body.getReader());
}

/** Reads and throws away the rest of a body, at most 4 MiB, then cancels it. Never throws. */
async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  try {
    let read = 0;
    while (read <= MAX_DISCARDED_BYTES) {
      const chunk = await reader.read();
      if (chunk.done) return;
      read += chunk.value.byteLength;
    }
    await reader.cancel();
  } catch {
    // A body that fails mid-way is gone either way.
  }
}

/**
 * A body sent without a Content-Length (chunked), read whole before anything else looks at the
 * request, so it has a known length (at most `maxBytes`); a longer one is read to its
 * end (bounded, see {@link discardRest}) and refused. Hono's `bodyLimit` alone would stop reading
 * such a body at the limit, and `wrangler dev` answers 503 for the unread rest.
 * @throws DomainError('payload_too_large') for a body over the limit.
 */
async function sizedBody(request: Request, maxBytes: number): Promise<Request> {
  if (request.body === null || request.headers.has('content-length')) return request;
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const chunk = await reader.read();
    if (chunk.done) break;
    size += chunk.value.byteLength;
    if (size > maxBytes) {
      await discardRest(reader);
      throw new DomainError('payload_too_large', `request bodies are limited to ${maxBytes} bytes`);
    }
    chunks.push(chunk.value);
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new Request(request, { body });
}

/** Builds the ports of one request from the runtime's context (env bindings, clock, host pool). */
export type PortsFactory = (c: Context<AppEnv>) => Ports;

/**
 * The edge's Hono app, the same on Workers, Deno and Node: the entry point supplies a factory
 * that builds the ports (database, host connection, clock) per request. Every error leaves as
 * `{error: {code, message, request_id}}` with the status of its code: this `onError` is the one
 * place that maps a domain error's code to HTTP (shared/errors.ts `httpStatusOf`).
 */
export function createApp(portsFor: PortsFactory): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.use(async function requestContext(c, next) {
    c.set('requestId', c.req.header('X-Request-Id')?.slice(0, 64) || crypto.randomUUID());
    c.header('X-Request-Id', c.var.requestId);
    c.set('ports', portsFor(c));
    await next();
    // A WebSocket upgrade (the owner's live view) hands the connection over: its request is
    // gone (Deno closes it) and its response is not ours to change.
    if (c.res.status === 101) return;
    await discardUnreadBody(c.req.raw);
    const sent = c.var.ports.statementsSent;
    if (sent) c.header('X-D1-Statements', String(sent()));
    const roundTrips = c.var.ports.roundTripsMade;
    if (roundTrips) c.header('X-D1-Round-Trips', String(roundTrips()));
    const profile = c.var.ports.profile;
    if (profile) c.header('Server-Timing', profile.serverTiming());
  });
  // A host's profile snapshot (issue 32) and a file the owner attaches to a run (issue 33) are
  // the bodies allowed past MAX_BODY_BYTES.
  const maxBytesOf = (c: Context<AppEnv>) => {
    if (c.req.method === 'PUT' && c.req.path.startsWith(SNAPSHOTS_PATH_PREFIX)) return MAX_SNAPSHOT_BYTES;
    return c.req.method === 'POST' && ATTACH_PATH.test(c.req.path) ? MAX_ATTACH_BODY_BYTES : MAX_BODY_BYTES;
  };
  const limits = new Map(
    [MAX_BODY_BYTES, MAX_SNAPSHOT_BYTES, MAX_ATTACH_BODY_BYTES].map((maxSize) => [
      maxSize,
      bodyLimit({
        maxSize,
        onError: () => {
          if (maxSize === MAX_ATTACH_BODY_BYTES)
            throw new DomainError('file_too_large', `a file attached to a run is at most ${MAX_ATTACH_BODY_BYTES} bytes of request`);
          throw new DomainError('payload_too_large', `request bodies are limited to ${maxSize} bytes`);
        },
      }),
    ]),
  );
  app.use(async function knownBodySize(c, next) {
    c.req.raw = await sizedBody(c.req.raw, maxBytesOf(c));
    await next();
  });
  app.use((c, next) => limits.get(maxBytesOf(c))!(c, next));

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  app.route('/', healthRoutes);
  app.route('/', scheduleRoutes);
  app.route('/', runRoutes);
  app.route('/', runFileRoutes);
  app.route('/', grantRoutes);
  app.route('/', memoryRoutes);
  app.route('/', policyProfileRoutes);
  app.route('/', memoryEvidenceRoutes);
  app.route('/', recipeRoutes);
  app.route('/', toolCallRoutes);
  app.route('/', approvalRoutes);
  app.route('/', signInRoutes);
  app.route('/', metricsRoutes);
  app.route('/', hostRoutes);
  app.route('/', principalRoutes);
  app.route('/', webhookRoutes);
  app.route('/', consoleRoutes);
  app.route('/', mcpRoutes);
  app.openAPIRegistry.registerPath({
    method: 'get',
    path: OPENAPI_PATH,
    summary: 'This OpenAPI 3.1 description of the API',
    responses: { 200: { description: 'the document', content: { 'application/json': { schema: { type: 'object' } } } } },
  });
  app.doc31(OPENAPI_PATH, {
    openapi: '3.1.0',
    info: {
      title: 'Policy-governed browser API',
      version: '1.0.0',
      description: 'Agents propose browser tool calls; owners approve; the edge decides by policy.',
    },
  });
  app.openAPIRegistry.registerPath({
    method: 'get',
    path: DOCS_PATH,
    summary: 'The interactive API reference (an HTML page over the OpenAPI document; works offline)',
    responses: { 200: { description: 'the page', content: { 'text/html': { schema: { type: 'string' } } } } },
  });
  app.get(
    DOCS_PATH,
    swaggerUI({ url: OPENAPI_PATH, baseUrl: DOCS_ASSETS_PATH, title: 'Policy-governed browser API', validatorUrl: 'none', deepLinking: true }),
  );

  app.notFound((c) => c.json(errorBody('not_found', `no route ${c.req.method} ${new URL(c.req.url).pathname}`, c.var.requestId), 404));
  app.onError((error, c) => {
    const requestId = c.var.requestId ?? crypto.randomUUID();
    if (error instanceof DomainError) {
      if (error.retryAfterS !== undefined) c.header('Retry-After', String(error.retryAfterS));
      if (error.wwwAuthenticate !== undefined) c.header('WWW-Authenticate', error.wwwAuthenticate);
      countRefusal(c.var.ports, error.code);
      return c.json(errorBody(error.code, error.message, requestId, error.details), httpStatusOf(error.code));
    }
    if (error instanceof HTTPException) {
      const code = codeOfHttpException(error);
      countRefusal(c.var.ports, code);
      return c.json(errorBody(code, error.message || code, requestId), error.status);
    }
    console.error(`[${requestId}] unexpected error`, error);
    return c.json(errorBody('internal_error', 'unexpected error; it has been logged', requestId), 500);
  });
  return app;
}

function errorBody(code: ErrorCode, message: string, requestId: string, details?: Record<string, string>): ErrorBody {
  return { error: { code, message, request_id: requestId, ...(details ? { details } : {}) } };
}

/** Hono's own validators throw plain HTTPExceptions (e.g. malformed JSON); name them. */
function codeOfHttpException(error: HTTPException): ErrorCode {
  if (error.status === 400 && /json/i.test(error.message)) return 'malformed_json';
  if (error.status === 401) return 'unauthenticated';
  if (error.status === 404) return 'not_found';
  if (error.status === 413) return 'payload_too_large';
  if (error.status === 415) return 'unsupported_media_type';
  return 'invalid_request';
}
