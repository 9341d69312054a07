import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { METRICS_CONTENT_TYPE, renderMetrics } from '../../metrics/metrics.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, newRouter } from '../router.ts';

const metrics = createRoute({
  method: 'get',
  path: '/metrics',
  summary:
    'Counts for the operator in the Prometheus text format: calls, settle outcomes, approval waits, grant uses, refusals, runs, host admission and leases',
  security: [{ bearer: [] }],
  middleware: [requirePrincipal('operator')] as const,
  responses: {
    200: { description: 'the exposition text (format 0.0.4)', content: { [METRICS_CONTENT_TYPE]: { schema: z.string() } } },
    ...errorResponses(...AUTH_ERRORS),
  },
});

/** `GET /metrics`: operator only; read from D1 and the host at scrape time (edge/metrics/metrics.ts). */
export const metricsRoutes = newRouter().openapi(metrics, async (c) => c.text(await renderMetrics(c.var.ports), 200, { 'Content-Type': METRICS_CONTENT_TYPE }));
