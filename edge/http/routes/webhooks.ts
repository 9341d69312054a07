import { createRoute } from '@hono/zod-openapi';
import { OwnerParam, OwnerWebhookBody, OwnerWebhookView } from '../../../shared/api.ts';
import { setOwnerWebhook } from '../../notifications/webhooks.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const setWebhook = createRoute({
  method: 'put',
  path: '/v1/owners/{owner_id}/webhook',
  summary: "Set an owner's webhook: approval needed, sign-in needed and run ended are posted to it, HMAC-signed, retried with backoff",
  security: [{ bearer: [] }],
  middleware: [requirePrincipal('operator')] as const,
  request: { params: OwnerParam, body: jsonBody(OwnerWebhookBody) },
  responses: { 200: jsonResponse(OwnerWebhookView, 'the webhook (without its secret)'), ...errorResponses(...AUTH_ERRORS, 'invalid_request', 'not_found') },
});

/** Operator endpoints for owners' notifications (edge/notifications/webhooks.ts). */
export const webhookRoutes = newRouter().openapi(setWebhook, async (c) => {
  const { owner_id } = c.req.valid('param');
  const { url, secret } = c.req.valid('json');
  await setOwnerWebhook(c.var.ports, owner_id, url, secret);
  return c.json({ owner_id, url, updated_at: new Date(c.var.ports.clock.now()).toISOString() }, 200);
});
