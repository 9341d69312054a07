import { createRoute } from '@hono/zod-openapi';
import { ApprovalList, ApprovalsQuery, DecisionBody, DecisionResponse, IdParam } from '../../../shared/api.ts';
import { decideApproval, listApprovals } from '../../pipeline/approvals.ts';
import { approvalView, toolCallView } from '../../pipeline/views.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

const list = createRoute({
  method: 'get',
  path: '/v1/approvals',
  summary: "The owner's approvals across runs (newest first), e.g. ?state=pending",
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { query: ApprovalsQuery },
  responses: { 200: jsonResponse(ApprovalList, 'approvals'), ...errorResponses(...AUTH_ERRORS) },
});

const decide = createRoute({
  method: 'post',
  path: '/v1/approvals/{id}/decision',
  summary: 'Approve or deny once; an approved call dispatches exactly once and the answer carries its outcome',
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { params: IdParam, body: jsonBody(DecisionBody) },
  responses: {
    200: jsonResponse(DecisionResponse, 'the decided approval and the call after dispatch'),
    ...errorResponses(...AUTH_ERRORS, 'not_found', 'already_decided', 'run_not_active'),
  },
});

/** Approval endpoints: owners only; agents can never approve. */
export const approvalRoutes = newRouter()
  .openapi(list, async (c) => {
    const rows = await listApprovals(c.var.ports, c.var.principal, c.req.valid('query').state);
    return c.json({ approvals: rows.map(({ approval, call }) => approvalView(approval, call)) }, 200);
  })
  .openapi(decide, async (c) => {
    const { approval, call } = await decideApproval(c.var.ports, c.var.principal, c.req.valid('param').id, c.req.valid('json').decision);
    return c.json({ approval: approvalView(approval, call), tool_call: toolCallView(call, approval.id, c.var.ports.config.resultBudgetBytes) }, 200);
  });
