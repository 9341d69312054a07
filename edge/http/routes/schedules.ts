import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { CreateScheduleBody, RunView, ScheduleView } from '../../../shared/api.ts';
import { anticipationOfRun } from '../../memories/anticipation-views.ts';
import { claimRun } from '../../runs/claim.ts';
import { runView } from '../../runs/view.ts';
import { createSchedule, listSchedules, scheduleView } from '../../schedules/schedules.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

const create = createRoute({
  method: 'post',
  path: '/v1/schedules',
  summary: 'Schedule runs: cron (UTC), intent, profile, origins, pinned tool versions, policy profile, deadline',
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { body: jsonBody(CreateScheduleBody) },
  responses: { 201: jsonResponse(ScheduleView, 'the schedule'), ...errorResponses(...AUTH_ERRORS) },
});

const list = createRoute({
  method: 'get',
  path: '/v1/schedules',
  summary: "The owner's schedules",
  security,
  middleware: [requirePrincipal('owner')] as const,
  responses: { 200: jsonResponse(z.strictObject({ schedules: z.array(ScheduleView) }), 'schedules, newest first'), ...errorResponses(...AUTH_ERRORS) },
});

const claim = createRoute({
  method: 'post',
  path: '/v1/runs/claim',
  summary: 'Claim the oldest queued run (e.g. one a schedule fired); the claim expires unless the agent keeps proposing',
  security,
  middleware: [requirePrincipal('agent')] as const,
  responses: { 200: jsonResponse(RunView, 'the claimed run'), ...errorResponses(...AUTH_ERRORS, 'not_found', 'fleet_full', 'host_unavailable') },
});

/** Schedule endpoints (owners) and the run claim (agents). */
export const scheduleRoutes = newRouter()
  .openapi(create, async (c) => c.json(scheduleView(await createSchedule(c.var.ports, c.var.principal, c.req.valid('json'))), 201))
  .openapi(list, async (c) => c.json({ schedules: (await listSchedules(c.var.ports, c.var.principal)).map(scheduleView) }, 200))
  .openapi(claim, async (c) => {
    const run = await claimRun(c.var.ports, c.var.principal);
    return c.json(runView(run, await anticipationOfRun(c.var.ports, run.id)), 200);
  });
