import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { HostList, HostRegistration, HostRemoval, HostView, IdParam } from '../../../shared/api.ts';
import { MAX_SNAPSHOT_BYTES, SnapshotReceipt, verifySnapshotDownload, verifySnapshotUpload } from '../../../shared/fleet.ts';
import { DomainError } from '../../domain-error.ts';
import { drainHost } from '../../fleet/drain.ts';
import { checkHost } from '../../fleet/health.ts';
import { listHosts, viewsOf } from '../../fleet/host-views.ts';
import { fleetHost, registerHost, removeHost } from '../../fleet/registry.ts';
import { acceptSnapshot, readSnapshot } from '../../fleet/snapshots.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

const list = createRoute({
  method: 'get',
  path: '/v1/hosts',
  summary: "The fleet's browser hosts: state, slots, leases and placements (operator)",
  security,
  middleware: [requirePrincipal('operator')] as const,
  responses: { 200: jsonResponse(HostList, 'the hosts, oldest first'), ...errorResponses(...AUTH_ERRORS) },
});

const register = createRoute({
  method: 'post',
  path: '/v1/hosts',
  summary: 'Add a browser host to the fleet by its wire URL (or take a drained one back into service); it is checked at once',
  security,
  middleware: [requirePrincipal('operator')] as const,
  request: { body: jsonBody(HostRegistration) },
  responses: {
    201: jsonResponse(HostView, 'the host was added'),
    200: jsonResponse(HostView, 'the URL was registered already: the host as it is (a draining or drained one is back in service)'),
    ...errorResponses(...AUTH_ERRORS),
  },
});

const drain = createRoute({
  method: 'post',
  path: '/v1/hosts/{id}/drain',
  summary: 'Drain a host: no new placements; its leases finish, its profiles are snapshotted and move on their next lease; then it reports drained',
  security,
  middleware: [requirePrincipal('operator')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(HostView, 'the host, draining (or drained)'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

const remove = createRoute({
  method: 'delete',
  path: '/v1/hosts/{id}',
  summary: 'Remove an operator-registered host; profiles placed there move on their next lease, restored from their newest snapshot',
  security,
  middleware: [requirePrincipal('operator')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(HostRemoval, 'removed'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

const SnapshotParams = z.strictObject({
  profile_id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .meta({ description: "the profile's stored id (the owner's prefix and the profile name)", examples: ['o5f0c9a1b2d3e_shopping'] }),
});
const SnapshotVersionParams = SnapshotParams.extend({
  // One spelling per version, as snapshotDownloadPath writes it: no exponent, hex, sign, leading zero or blank.
  version: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/, 'a version number from 1, in decimal digits')
    .transform(Number)
    .pipe(z.int().min(1).max(Number.MAX_SAFE_INTEGER))
    .meta({ description: 'the snapshot version, from 1', examples: ['1'] }),
});
const binary = { 'application/octet-stream': { schema: z.string().meta({ format: 'binary', description: 'the sealed snapshot (AES-256-GCM)' }) } };

const putSnapshot = createRoute({
  method: 'put',
  path: '/v1/host/snapshots/{profile_id}',
  summary:
    "A browser host's sealed snapshot of a profile placed on it (bearer: an HS256 upload token over the hosts' shared secret naming the generation, size and SHA-256); stored only at the placement's current generation",
  request: { params: SnapshotParams, body: { content: binary, required: true } },
  responses: {
    201: jsonResponse(SnapshotReceipt, 'stored as the next version'),
    ...errorResponses('unauthenticated', 'invalid_request', 'payload_too_large', 'unsupported_media_type', 'stale_generation', 'rate_limited'),
  },
});

const getSnapshot = createRoute({
  method: 'get',
  path: '/v1/host/snapshots/{profile_id}/{version}',
  summary: "A profile's sealed snapshot, for the host it is placed on (bearer: an HS256 download token over the hosts' shared secret)",
  request: { params: SnapshotVersionParams },
  responses: {
    200: { description: 'the sealed bytes', content: binary },
    ...errorResponses('unauthenticated', 'invalid_request', 'not_found', 'stale_generation'),
  },
});

/** The bearer token of a host's snapshot request. @throws DomainError('unauthenticated') */
function bearerOf(header: string | undefined): string {
  const token = /^Bearer ([A-Za-z0-9._-]{1,4096})$/.exec(header ?? '')?.[1];
  if (!token) throw new DomainError('unauthenticated', 'a snapshot request carries its host-signed token as the bearer');
  return token;
}

/**
 * The fleet (issue 32): the operator's hosts API, and the two endpoints hosts use for profile
 * snapshots (shared/fleet.ts), authenticated by their own signed tokens rather than an API token.
 */
export const hostRoutes = newRouter()
  .openapi(list, async (c) => c.json({ hosts: await listHosts(c.var.ports) }, 200))
  .openapi(register, async (c) => {
    const { host, created } = await registerHost(c.var.ports, c.req.valid('json'));
    await checkHost(c.var.ports, host);
    const [view] = await viewsOf(c.var.ports, [await fleetHost(c.var.ports, host.id)]);
    return created ? c.json(view!, 201) : c.json(view!, 200);
  })
  .openapi(drain, async (c) => c.json(await drainHost(c.var.ports, c.req.valid('param').id), 200))
  .openapi(remove, async (c) => c.json(await removeHost(c.var.ports, c.req.valid('param').id), 200))
  .openapi(putSnapshot, async (c) => {
    const claims = await verifySnapshotUpload(c.var.ports.hostSecret, bearerOf(c.req.header('Authorization')));
    const { profile_id } = c.req.valid('param');
    if (!claims || claims.profileId !== profile_id) throw new DomainError('unauthenticated', 'the snapshot token is not valid for this profile');
    if (!/^application\/octet-stream\b/i.test(c.req.header('Content-Type') ?? '')) {
      throw new DomainError('unsupported_media_type', 'a snapshot is sent as application/octet-stream');
    }
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    if (bytes.byteLength > MAX_SNAPSHOT_BYTES) throw new DomainError('payload_too_large', `a snapshot is at most ${MAX_SNAPSHOT_BYTES} bytes`);
    return c.json(await acceptSnapshot(c.var.ports, claims, bytes), 201);
  })
  .openapi(getSnapshot, async (c) => {
    const claims = await verifySnapshotDownload(c.var.ports.hostSecret, bearerOf(c.req.header('Authorization')));
    const { profile_id, version } = c.req.valid('param');
    if (!claims || claims.profileId !== profile_id || claims.version !== version) {
      throw new DomainError('unauthenticated', 'the snapshot token is not valid for this profile and version');
    }
    const bytes = await readSnapshot(c.var.ports, { hostId: claims.hostId, profileId: profile_id, version });
    return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(bytes.byteLength) });
  });
