import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { CreateGrantBody, GrantList, GrantView, IdParam, RevokedGrants } from '../../../shared/api.ts';
import { ProfileName } from '../../../shared/policy.ts';
import type { GrantRow } from '../../db/schema.ts';
import { createGrant, grantView, listGrants, revokeGrant, revokeGrantsOfVersion } from '../../grants/grants.ts';
import { profileInForce } from '../../policy/profile.ts';
import type { Ports } from '../../ports.ts';
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

const revokeVersion = createRoute({
  method: 'post',
  path: '/v1/policy-profiles/{name}/versions/{version}/revoke-grants',
  summary: 'Revoke every live grant made under one version of a policy profile (operators)',
  security,
  middleware: [requirePrincipal('operator')] as const,
  request: {
    params: z.strictObject({
      name: ProfileName,
      version: z.coerce
        .number()
        .int()
        .min(1)
        .max(1_000_000)
        .meta({ examples: [3] }),
    }),
  },
  responses: { 200: jsonResponse(RevokedGrants, 'how many grants were revoked'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
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

/** The hash of each named profile's version in force now. */
async function hashesInForce(ports: Ports, rows: readonly GrantRow[]): Promise<Map<string, string>> {
  const names = [...new Set(rows.map((row) => row.policyProfile))];
  return new Map(await Promise.all(names.map(async (name) => [name, (await profileInForce(ports.db, name)).hash] as const)));
}

/** The views of `rows`, each saying whether its policy is still in force. */
async function viewsOf(ports: Ports, rows: readonly GrantRow[]): Promise<GrantView[]> {
  const hashes = await hashesInForce(ports, rows);
  return rows.map((row) => grantView(row, hashes.get(row.policyProfile) ?? ''));
}

/** Grant endpoints: owners grant, list and revoke theirs; operators void every grant of a profile version. */
export const grantRoutes = newRouter()
  .openapi(create, async (c) => {
    const body = c.req.valid('json');
    const profile = await profileInForce(c.var.ports.db, body.policy_profile ?? 'default');
    const row = await createGrant(c.var.ports, c.var.principal, body, profile);
    return c.json(grantView(row, profile.hash), 201);
  })
  .openapi(list, async (c) => c.json({ grants: await viewsOf(c.var.ports, await listGrants(c.var.ports, c.var.principal)) }, 200))
  .openapi(revoke, async (c) => {
    const row = await revokeGrant(c.var.ports, c.var.principal, c.req.valid('param').id);
    return c.json((await viewsOf(c.var.ports, [row]))[0] as GrantView, 200);
  })
  .openapi(revokeVersion, async (c) => {
    const { name, version } = c.req.valid('param');
    const { hash, revoked } = await revokeGrantsOfVersion(c.var.ports, name, version);
    return c.json({ policy_profile: name, version, policy_hash: hash, revoked }, 200);
  });
