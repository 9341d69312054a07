import { createRoute } from '@hono/zod-openapi';
import { CreatePrincipalBody, IssuedPrincipal, PrincipalList, PrincipalParam, PrincipalView } from '../../../shared/api.ts';
import { createPrincipal, listPrincipals, rotatePrincipal } from '../../auth/principal-registry.ts';
import { revokePrincipal } from '../../auth/revocation.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

const create = createRoute({
  method: 'post',
  path: '/v1/principals',
  summary: 'Create an owner, or an agent acting for an owner (operator); the answer carries its bearer token, shown this once',
  security,
  middleware: [requirePrincipal('operator')] as const,
  request: { body: jsonBody(CreatePrincipalBody) },
  responses: {
    201: jsonResponse(IssuedPrincipal, 'the principal and its token'),
    ...errorResponses(...AUTH_ERRORS, 'not_found', 'already_revoked'),
  },
});

const list = createRoute({
  method: 'get',
  path: '/v1/principals',
  summary: 'Every principal, revoked ones too, oldest first; never a token (operator)',
  security,
  middleware: [requirePrincipal('operator')] as const,
  responses: { 200: jsonResponse(PrincipalList, 'the principals'), ...errorResponses(...AUTH_ERRORS) },
});

const rotate = createRoute({
  method: 'post',
  path: '/v1/principals/{id}/rotate',
  summary: 'Give a principal a new bearer token, shown this once; the old one is refused from then on (every edge within 5 s) (operator)',
  security,
  middleware: [requirePrincipal('operator')] as const,
  request: { params: PrincipalParam },
  responses: {
    200: jsonResponse(IssuedPrincipal, 'the principal and its new token'),
    ...errorResponses(...AUTH_ERRORS, 'not_found', 'already_revoked'),
  },
});

const revoke = createRoute({
  method: 'post',
  path: '/v1/principals/{id}/revoke',
  summary:
    "Revoke a principal for good: its token (and an owner's agents' tokens) answer 401 principal_revoked on every edge within 5 s; an owner's console sessions end. The last unrevoked operator cannot be revoked (operator)",
  security,
  middleware: [requirePrincipal('operator')] as const,
  request: { params: PrincipalParam },
  responses: {
    200: jsonResponse(PrincipalView, 'the revoked principal'),
    ...errorResponses(...AUTH_ERRORS, 'not_found', 'already_revoked', 'last_operator'),
  },
});

/**
 * The operator's principals API (issue 32): owners and agents managed without SQL. Tokens are
 * shown only in the answers of create and rotate; the edge keeps their SHA-256.
 */
export const principalRoutes = newRouter()
  .openapi(create, async (c) => c.json(await createPrincipal(c.var.ports, c.req.valid('json')), 201))
  .openapi(list, async (c) => c.json({ principals: await listPrincipals(c.var.ports) }, 200))
  .openapi(rotate, async (c) => c.json(await rotatePrincipal(c.var.ports, c.req.valid('param').id), 200))
  .openapi(revoke, async (c) => c.json(await revokePrincipal(c.var.ports, c.req.valid('param').id), 200));
