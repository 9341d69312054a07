import { createRoute } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import { z } from 'zod';
import { IdParam, ProposeBody, ToolCallView, WaitQuery } from '../../../shared/api.ts';
import { DomainError } from '../../domain-error.ts';
import { enterProposal } from '../../pipeline/agent-entry.ts';
import { readToolCall } from '../../pipeline/read-call.ts';
import { toolCallView } from '../../pipeline/views.ts';
import { admitProposal } from '../../quotas/rates.ts';
import type { AppEnv } from '../app-env.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

/**
 * Middleware: the agent entry's admission (edge/pipeline/agent-entry.ts) for a body that is not
 * JSON, counting the proposal against the agent's and its owner's per-minute rates (429
 * `rate_limited` past them) before the framework refuses it. A JSON body is counted by the agent
 * entry (a valid proposal with its first read, one statement for both) or, when the schema
 * refuses it, by the route's validation hook: every proposal counts once, malformed or not.
 */
const proposalAdmission = createMiddleware<AppEnv>(async function proposalAdmission(c, next) {
  const json = await c.req.json().then(
    () => true,
    () => false,
  );
  if (!json) {
    await admitProposal(c.var.ports, c.var.principal);
    c.set('proposalAdmitted', true);
  }
  await next();
});

const propose = createRoute({
  method: 'post',
  path: '/v1/runs/{id}/tool-calls',
  summary: 'Propose one tool call: {tool, version, arguments}',
  description:
    '200: the finished call (succeeded, failed or uncertain). 202: parked, waiting for the owner (approval_id). ' +
    '403 policy_denied with the deciding rule; 400 invalid_arguments; 409 stale_revision, call_in_progress or run_not_active; ' +
    '409 profile_in_use (details.run_id holds the profile; Retry-After: seconds until its lease lapses); ' +
    '429 rate_limited (proposals per minute) or quota_exceeded (leased browsers per owner), with Retry-After.',
  security,
  // The proposal rate is counted before the body is read: malformed proposals count too.
  middleware: [requirePrincipal('agent'), proposalAdmission] as const,
  request: { params: IdParam, body: jsonBody(ProposeBody) },
  responses: {
    200: jsonResponse(ToolCallView, 'the finished call'),
    202: jsonResponse(ToolCallView, 'waiting for approval'),
    ...errorResponses(
      ...AUTH_ERRORS,
      'invalid_arguments',
      'not_found',
      'policy_denied',
      'stale_revision',
      'call_in_progress',
      'run_not_active',
      'profile_revoked',
      'profile_in_use',
      'rate_limited',
      'quota_exceeded',
      'fleet_full',
      'host_unavailable',
    ),
  },
});

const read = createRoute({
  method: 'get',
  path: '/v1/tool-calls/{id}',
  summary: "A call's state and result, long-polling up to wait_ms (0-30000) for it to finish",
  security,
  middleware: [requirePrincipal('agent', 'owner')] as const,
  request: { params: IdParam, query: WaitQuery },
  responses: { 200: jsonResponse(ToolCallView, 'the call'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

/**
 * The refusal of a proposal the route's schemas reject. It still counts against the proposal rates
 * (see {@link proposalAdmission}), and a refusal past them wins.
 * @throws DomainError('rate_limited') with Retry-After; else DomainError(`code`, `message`).
 */
async function refuseInput(c: Context<AppEnv>, code: 'invalid_arguments' | 'invalid_request', message: string): Promise<never> {
  if (c.var.proposalAdmitted !== true) {
    await admitProposal(c.var.ports, c.var.principal);
    c.set('proposalAdmitted', true);
  }
  throw new DomainError(code, message);
}

/** Tool call endpoints. A proposal whose envelope fails its schema is `invalid_arguments`. */
export const toolCallRoutes = newRouter()
  .openapi(
    propose,
    async (c) => {
      const outcome = await enterProposal(c.var.ports, c.var.principal, c.req.valid('param').id, c.req.valid('json'), {
        admitted: c.var.proposalAdmitted === true,
      });
      const view = toolCallView(outcome.call, outcome.approvalId, c.var.ports.config.resultBudgetBytes);
      return outcome.status === 202 ? c.json(view, 202) : c.json(view, 200);
    },
    (result, c) => {
      if (!result.success) return refuseInput(c, result.target === 'json' ? 'invalid_arguments' : 'invalid_request', z.prettifyError(result.error));
      return undefined;
    },
  )
  .openapi(read, async (c) => {
    const { call, approvalId } = await readToolCall(c.var.ports, c.var.principal, c.req.valid('param').id, c.req.valid('query').wait_ms ?? 0);
    return c.json(toolCallView(call, approvalId, c.var.ports.config.resultBudgetBytes), 200);
  });
