import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { PolicyProfileView, ProfileName, PublishProfileBody } from '../../../shared/policy.ts';
import { profileView, publishProfile } from '../../policy/publish.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];
const NameParam = z.strictObject({ name: ProfileName });

const read = createRoute({
  method: 'get',
  path: '/v1/policy-profiles/{name}',
  summary: 'The version of a policy profile in force, with its hash',
  security,
  middleware: [requirePrincipal('operator', 'owner')] as const,
  request: { params: NameParam },
  responses: { 200: jsonResponse(PolicyProfileView, 'the profile'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

const publish = createRoute({
  method: 'post',
  path: '/v1/policy-profiles/{name}',
  summary: 'Publish the next version of a policy profile: rules (exact tool, effect, optional condition) and operator denies',
  security,
  middleware: [requirePrincipal('operator')] as const,
  request: { params: NameParam, body: jsonBody(PublishProfileBody) },
  responses: { 201: jsonResponse(PolicyProfileView, 'the new version'), ...errorResponses(...AUTH_ERRORS, 'already_decided') },
});

/** Policy profile endpoints: operators publish, owners and operators read. */
export const policyProfileRoutes = newRouter()
  .openapi(read, async (c) => c.json(await profileView(c.var.ports, c.req.valid('param').name), 200))
  .openapi(publish, async (c) => c.json(await publishProfile(c.var.ports, c.var.principal, c.req.valid('param').name, c.req.valid('json')), 201));
