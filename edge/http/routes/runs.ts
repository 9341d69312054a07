import { createRoute } from '@hono/zod-openapi';
import { ActivityList, CreateRunBody, IdParam, MessageBody, MessageView, ReportBody, RunList, RunListQuery, RunView } from '../../../shared/api.ts';
import { AnticipationRecordView } from '../../../shared/memories.ts';
import { placementOfRun } from '../../fleet/placement.ts';
import { anticipationOfRun, anticipationRecordOf } from '../../memories/anticipation-views.ts';
import { anticipateRunStart } from '../../memories/run-anticipation.ts';
import { noteRecipeEnd } from '../../recipes/progress.ts';
import { kickRecipeRuns } from '../../recipes/scheduling.ts';
import { runActivity } from '../../runs/activity.ts';
import { addMessage, cancelRun, createRun, loadRun, reportRun } from '../../runs/lifecycle.ts';
import { listRuns } from '../../runs/listing.ts';
import { runView } from '../../runs/view.ts';
import { pendingWaitOf } from '../../sign-in/owner-views.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

const create = createRoute({
  method: 'post',
  path: '/v1/runs',
  summary:
    "Create a run: profile, intent, allowed origins, deadline; an owner's intent that equals one reviewed recipe's phrase (case, whitespace and punctuation folded) on its origin binds the run to that recipe",
  security,
  middleware: [requirePrincipal('owner', 'agent')] as const,
  request: { body: jsonBody(CreateRunBody) },
  responses: { 201: jsonResponse(RunView, 'the run'), ...errorResponses(...AUTH_ERRORS, 'profile_revoked', 'rate_limited', 'quota_exceeded') },
});

const list = createRoute({
  method: 'get',
  path: '/v1/runs',
  summary:
    "Runs, newest first, a page at a time: the owner's own, or every owner's for an operator; filtered by state and profile; `next_cursor` reads the next page",
  security,
  middleware: [requirePrincipal('owner', 'operator')] as const,
  request: { query: RunListQuery },
  responses: { 200: jsonResponse(RunList, 'one page of runs'), ...errorResponses(...AUTH_ERRORS, 'invalid_cursor') },
});

const read = createRoute({
  method: 'get',
  path: '/v1/runs/{id}',
  summary: "A run's state",
  security,
  middleware: [requirePrincipal('owner', 'agent')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(RunView, 'the run'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

const activity = createRoute({
  method: 'get',
  path: '/v1/runs/{id}/activity',
  summary: "A run's passive activity record",
  security,
  middleware: [requirePrincipal('owner', 'agent')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(ActivityList, 'the activity, oldest first'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

const anticipation = createRoute({
  method: 'get',
  path: '/v1/runs/{id}/anticipation',
  summary:
    "The owner's record of a run's anticipation (issue 34): how it was decided, the verified anticipations and every refused prediction with its reason (never shown to agents)",
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(AnticipationRecordView, 'the anticipation record'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

const message = createRoute({
  method: 'post',
  path: '/v1/runs/{id}/messages',
  summary: 'Start a new turn: trusted from the owner, untrusted when an agent relays it',
  security,
  middleware: [requirePrincipal('owner', 'agent')] as const,
  request: { params: IdParam, body: jsonBody(MessageBody) },
  responses: { 201: jsonResponse(MessageView, 'the message'), ...errorResponses(...AUTH_ERRORS, 'not_found', 'run_not_active') },
});

const report = createRoute({
  method: 'post',
  path: '/v1/runs/{id}/report',
  summary:
    "The agent's tool-free final report; ends the run. `memories` it proposes become suggestions the owner accepts or rejects (never memories by themselves); those past the owner's 50 pending suggestions are not kept, and the report still ends the run (the run's activity lists the ones kept)",
  security,
  middleware: [requirePrincipal('agent')] as const,
  request: { params: IdParam, body: jsonBody(ReportBody) },
  responses: { 200: jsonResponse(RunView, 'the ended run'), ...errorResponses(...AUTH_ERRORS, 'not_found', 'run_not_active') },
});

const cancel = createRoute({
  method: 'post',
  path: '/v1/runs/{id}/cancel',
  summary: 'Cancel a run; fences everything parked on it',
  security,
  middleware: [requirePrincipal('owner', 'agent')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(RunView, 'the cancelled run'), ...errorResponses(...AUTH_ERRORS, 'not_found', 'run_not_active') },
});

/** Run endpoints of DESIGN.md section 13. Handlers only parse, call one service, answer. */
export const runRoutes = newRouter()
  .openapi(create, async (c) => {
    const run = await createRun(c.var.ports, c.var.principal, c.req.valid('json'));
    // Decided before the answer, so the create shows it and no agent claims the run without it.
    const shown = await anticipateRunStart(c.var.ports, run, c.var.principal.kind === 'owner' ? 'owner' : 'agent');
    // A run bound to a reviewed recipe is carried out by the edge's recipe runner (issue 19).
    if (run.recipeId !== null) await kickRecipeRuns(c.var.ports, [run.id]);
    return c.json(runView(run, shown), 201);
  })
  .openapi(list, async (c) => c.json(await listRuns(c.var.ports, c.var.principal, c.req.valid('query')), 200))
  .openapi(read, async (c) => {
    const run = await loadRun(c.var.ports, c.var.principal, c.req.valid('param').id);
    const wait = run.state === 'waiting_for_authentication' ? await pendingWaitOf(c.var.ports, run.id) : undefined;
    const [placement, shown] = await Promise.all([placementOfRun(c.var.ports, run), anticipationOfRun(c.var.ports, run.id)]);
    return c.json(runView(run, shown, wait, placement), 200);
  })
  .openapi(anticipation, async (c) => {
    const run = await loadRun(c.var.ports, c.var.principal, c.req.valid('param').id);
    return c.json(await anticipationRecordOf(c.var.ports, run.id), 200);
  })
  .openapi(activity, async (c) => {
    const run = await loadRun(c.var.ports, c.var.principal, c.req.valid('param').id);
    return c.json(await runActivity(c.var.ports, run), 200);
  })
  .openapi(message, async (c) => {
    const run = await loadRun(c.var.ports, c.var.principal, c.req.valid('param').id);
    return c.json(await addMessage(c.var.ports, c.var.principal, run, c.req.valid('json').text), 201);
  })
  .openapi(report, async (c) => {
    const run = await loadRun(c.var.ports, c.var.principal, c.req.valid('param').id);
    const ended = (await reportRun(c.var.ports, c.var.principal, run, c.req.valid('json'))).run;
    return c.json(runView(ended, await anticipationOfRun(c.var.ports, ended.id)), 200);
  })
  .openapi(cancel, async (c) => {
    const run = await loadRun(c.var.ports, c.var.principal, c.req.valid('param').id);
    const cancelled = await cancelRun(c.var.ports, c.var.principal, run);
    // A recipe-bound run's timeline records the end at once (issue 19).
    if (cancelled.recipeId !== null) await noteRecipeEnd(c.var.ports, cancelled);
    return c.json(runView(cancelled, await anticipationOfRun(c.var.ports, cancelled.id)), 200);
  });
