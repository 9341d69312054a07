import { eq, inArray } from 'drizzle-orm';
import type { Context } from 'hono';
import { Hono } from 'hono';
import { z } from 'zod';
import { type CallPhases, CreateGrantBody } from '../../shared/api.ts';
import { ActionKind } from '../../shared/tool-arguments.ts';
import { screenshotsOfCalls } from '../artifacts/screenshots.ts';
import type { Principal } from '../auth/principal.ts';
import { runs, type ToolCallRow } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { createGrant } from '../grants/grants.ts';
import { decideApproval, listApprovals } from '../pipeline/approvals.ts';
import { callSummary } from '../pipeline/views.ts';
import { profileInForce } from '../policy/profile.ts';
import type { Ports } from '../ports.ts';
import { type InboxItem, inboxList, inboxPage } from './pages.ts';
import { pictureOf } from './pictures.ts';
import { type ConsoleEnv, ownerOf, requireCsrf } from './session-guard.ts';

/** Every pending approval of the owner, with what the inbox shows of each. */
export async function inboxItems(c: Context<ConsoleEnv>): Promise<InboxItem[]> {
  const pending = await listApprovals(c.var.ports, ownerOf(c.var.session), 'pending');
  if (pending.length === 0) return [];
  const runRows = await c.var.ports.db
    .select({ id: runs.id, intent: runs.intent, deadlineAt: runs.deadlineAt })
    .from(runs)
    .where(
      inArray(
        runs.id,
        pending.map(({ approval }) => approval.runId),
      ),
    );
  const byId = new Map(runRows.map((run) => [run.id, run]));
  const pictures = await screenshotsOfCalls(
    c.var.ports,
    c.var.session.ownerId,
    pending.map(({ call }) => call.id),
  );
  return pending.map(({ approval, call }) => ({
    approvalId: approval.id,
    summary: callSummary(call),
    tool: call.tool,
    target: (call.phases as CallPhases).target ?? null,
    action: call.tool === 'browser.act' ? actionOf(call) : undefined,
    runIntent: byId.get(approval.runId)?.intent ?? approval.runId,
    rule: call.decisionRule ?? undefined,
    askedAt: approval.createdAt,
    runDeadlineAt: byId.get(approval.runId)?.deadlineAt ?? approval.createdAt,
    picture: pictureOf(pictures.get(call.id)?.parked),
  }));
}

/** The grant shortcut's scope, as the owner set it: uses and minutes. */
const Allowance = z.strictObject({ uses: z.coerce.number().int().min(1).max(50), minutes: z.coerce.number().int().min(1).max(240) });

/**
 * The grant of the inbox's "approve and allow the same": the approved act's tool and action kind,
 * on the origin of the frame that held its target, for `uses` uses within `minutes`, under the
 * run's policy profile in force now (grants.ts `createGrant`, the API's own rules).
 * @returns what was granted, in words.
 */
async function allowTheSame(ports: Ports, owner: Principal, call: ToolCallRow, allowance: z.infer<typeof Allowance>): Promise<string> {
  const target = (call.phases as CallPhases).target;
  const action = actionOf(call);
  if (call.tool !== 'browser.act' || target === undefined || action === undefined) return 'Nothing was allowed: only an act can be allowed again.';
  const run = await ports.db.select({ policyProfile: runs.policyProfile }).from(runs).where(eq(runs.id, call.runId)).get();
  const profile = await profileInForce(ports.db, run?.policyProfile ?? 'default');
  const body = CreateGrantBody.safeParse({
    tool: 'browser.act',
    actions: [action],
    origin: target.frame_origin,
    max_uses: allowance.uses,
    ttl_ms: allowance.minutes * 60_000,
    policy_profile: profile.name,
  });
  if (!body.success) return `Nothing was allowed: acts on ${target.frame_origin} cannot be granted.`;
  await createGrant(ports, owner, body.data, profile);
  return `Allowed: ${action} on ${target.frame_origin} for ${allowance.uses} uses within ${allowance.minutes} minutes.`;
}

/** The action kind of a stored `browser.act` call (`click`, `type`, ...), if its arguments name one. */
function actionOf(call: Pick<ToolCallRow, 'arguments'>): ActionKind | undefined {
  return ActionKind.safeParse((call.arguments as { action?: unknown } | null)?.action).data;
}

/**
 * The inbox (issue 15): every pending approval of the owner with Approve, Deny and "approve and
 * allow the same"; `/console/inbox` is the list alone, for the page's refresh. A decision goes
 * through `decideApproval`, the API's own, which also goes on with a recipe-bound run.
 */
export const inboxRoutes = new Hono<ConsoleEnv>()
  .get('/console', async (c) => c.html(inboxPage(await inboxItems(c), c.var.session.csrfToken, c.var.ports.clock.now(), c.req.query('notice'))))
  .get('/console/inbox', async (c) => c.html(inboxList(await inboxItems(c), c.var.session.csrfToken, c.var.ports.clock.now())))
  .post('/console/approvals/:id/decision', async (c) => {
    const form = await requireCsrf(c);
    const decision = form.decision;
    if (decision !== 'approve' && decision !== 'deny' && decision !== 'approve_and_allow') {
      throw new DomainError('invalid_request', 'decision: approve, deny or approve_and_allow');
    }
    const allowance = decision === 'approve_and_allow' ? Allowance.safeParse({ uses: form.uses, minutes: form.minutes }) : undefined;
    if (allowance !== undefined && !allowance.success) throw new DomainError('invalid_request', 'uses: 1 to 50, minutes: 1 to 240');
    let notice: string;
    try {
      const owner = ownerOf(c.var.session);
      let allowed = '';
      // The grant lands before a recipe-bound run goes on, so its next act can use it.
      const decided = await decideApproval(c.var.ports, owner, c.req.param('id'), decision === 'deny' ? 'deny' : 'approve', async ({ approval, call }) => {
        if (allowance?.success && approval.state === 'approved') allowed = ` ${await allowTheSame(c.var.ports, owner, call, allowance.data)}`;
      });
      notice =
        decision === 'deny'
          ? 'Denied: the agent was told.'
          : decided.approval.state === 'approved'
            ? `Approved: the call ${decided.call.state}.${allowed}`
            : `Not approved: the policy in force now ${decided.approval.state === 'denied' ? 'denies' : 'does not allow'} this call.`;
    } catch (error) {
      if (!(error instanceof DomainError) || !['already_decided', 'run_not_active', 'not_found'].includes(error.code)) throw error;
      notice = `Not decided: ${error.message}.`;
    }
    return c.redirect(`/console?notice=${encodeURIComponent(notice)}`, 303);
  });
