import { createRoute } from '@hono/zod-openapi';
import { HealthView } from '../../../shared/api.ts';
import { toolVersions } from '../../../shared/tools.ts';
import { jsonResponse, newRouter } from '../router.ts';

const health = createRoute({
  method: 'get',
  path: '/v1/health',
  summary: 'Liveness and the versions of the tool contracts',
  responses: { 200: jsonResponse(HealthView, 'the edge is up') },
});

/** `GET /v1/health`: public; answers without touching the database or the host. */
export const healthRoutes = newRouter().openapi(health, (c) => c.json({ status: 'ok' as const, tools: toolVersions() }, 200));
