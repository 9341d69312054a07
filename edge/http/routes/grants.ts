import { createRoute } from '@hono/zod-openapi';
import { CreateGrantBody, GrantList, GrantView, IdParam } from '../../../shared/api.ts';
import { createGrant, grantView, listGrants, revokeGrant } from '../../grants/grants.ts';
import { profileInForce } from '../../policy/profile.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

const create = createRoute({
  method: 'post',
  path: '/v1/grants',
  summary: 'Grant: let acts of one scope (action kinds, page origin) run without asking, at most max_uses times until it expires',
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { body: jsonBody(CreateGrantBody) },
  responses: { 201: jsonResponse(GrantView, 'the grant, bound to the policy hash in force'), ...errorResponses(...AUTH_ERRORS) },
});

const list = createRoute({
  method: 'get',
  path: '/v1/grants',
  summary: "The owner's grants with their use counts",
  security,
  middleware: [requirePrincipal('owner')] as const,
  responses: { 200: jsonResponse(GrantList, 'grants, newest first'), ...errorResponses(...AUTH_ERRORS) },
});

const revoke = createRoute({
  method: 'post',
  path: '/v1/grants/{id}/revoke',
  summary: 'Revoke a grant; uses already charged stay charged',
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(GrantView, 'the revoked grant'), ...errorResponses(...AUTH_ERRORS, 'not_found', 'already_decided') },
});

/** Grant endpoints: owners only. */
export const grantRoutes = newRouter()
  .openapi(create, async (c) => {
    const profile = await profileInForce(c.var.ports.db, 'default');
    return c.json(grantView(await createGrant(c.var.ports, c.var.principal, c.req.valid('json'), profile.hash)), 201);
  })
  .openapi(list, async (c) => c.json({ grants: (await listGrants(c.var.ports, c.var.principal)).map(grantView) }, 200))
  .openapi(revoke, async (c) => c.json(grantView(await revokeGrant(c.var.ports, c.var.principal, c.req.valid('param').id)), 200));
