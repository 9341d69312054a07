import { inArray } from 'drizzle-orm';
import type { Context } from 'hono';
import { Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { csrf } from 'hono/csrf';
import type { Principal } from '../auth/principal.ts';
import { type ConsoleSessionRow, runs } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { AppEnv } from '../http/app-env.ts';
import { principalForToken, requirePrincipal } from '../http/require-principal.ts';
import { decideApproval, listApprovals } from '../pipeline/approvals.ts';
import { callSummary } from '../pipeline/views.ts';
import { CONSOLE_CSS, CONSOLE_JS, type InboxItem, inboxList, inboxPage, signInPage } from './pages.ts';
import { endSession, issueLink, openSession, redeemLink, SESSION_TTL_MS, sessionOf } from './sessions.ts';

/** The session cookie: HttpOnly, SameSite=Strict, only under `/console`; Secure outside loopback. */
const COOKIE = 'console_session';

type ConsoleEnv = AppEnv & { Variables: { session: ConsoleSessionRow } };

function isLoopback(url: string): boolean {
  const host = new URL(url).hostname;
  return host === '127.0.0.1' || host === 'localhost' || host === '[::1]' || host.endsWith('.localhost');
}

/** Starts a session for `ownerId` and sets its cookie. */
async function signIn(c: Context<ConsoleEnv>, ownerId: string): Promise<void> {
  const opened = await openSession(c.var.ports, ownerId);
  setCookie(c, COOKIE, opened.sessionId, {
    httpOnly: true,
    sameSite: 'Strict',
    path: '/console',
    secure: !isLoopback(c.req.url),
    maxAge: Math.floor(SESSION_TTL_MS / 1000),
  });
}

/** The owner a session acts as: the owner principal itself. */
function ownerOf(session: ConsoleSessionRow): Principal {
  return { id: session.ownerId, kind: 'owner', ownerId: session.ownerId };
}

/** Every pending approval of the owner, with what the inbox shows of each. */
async function inboxItems(c: Context<ConsoleEnv>): Promise<InboxItem[]> {
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
  return pending.map(({ approval, call }) => ({
    approvalId: approval.id,
    summary: callSummary(call),
    tool: call.tool,
    target: (call.phases as { target?: InboxItem['target'] } | null)?.target ?? null,
    runIntent: byId.get(approval.runId)?.intent ?? approval.runId,
    rule: call.decisionRule ?? undefined,
    askedAt: approval.createdAt,
    runDeadlineAt: byId.get(approval.runId)?.deadlineAt ?? approval.createdAt,
  }));
}

/**
 * The owner's console (issue 15), served by the edge on every runtime: sign-in (the owner's token
 * exchanged once for a session, or a one-time link), the inbox of pending approvals with Approve
 * and Deny, and sign-out. Every form post must come from the console's own origin (`Origin`
 * checked) and carry the session's CSRF token; agent, operator and host tokens cannot open a
 * session. Operators issue one-time links with `POST /console/links {owner_id}`.
 */
export const consoleRoutes = new Hono<ConsoleEnv>()
  .use('/console/*', csrf())
  .get('/console/assets/console.css', (c) => c.body(CONSOLE_CSS, 200, { 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': 'max-age=300' }))
  .get('/console/assets/console.js', (c) => c.body(CONSOLE_JS, 200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'max-age=300' }))
  .get('/console/sign-in', (c) => c.html(signInPage()))
  .post('/console/sign-in', async (c) => {
    const form = await c.req.parseBody();
    const token = typeof form.token === 'string' ? form.token.trim() : '';
    const principal = await principalForToken(c.var.ports, token);
    if (principal === undefined) return c.html(signInPage('That token is not known.'), 401);
    if (principal.kind !== 'owner') return c.html(signInPage(`Only an owner's token opens the console; this is an ${principal.kind} token.`), 403);
    await signIn(c, principal.ownerId);
    return c.redirect('/console', 303);
  })
  .get('/console/link/:token', async (c) => {
    const ownerId = await redeemLink(c.var.ports, c.req.param('token'));
    if (ownerId === undefined) return c.html(signInPage('That sign-in link was used already or has expired.'), 410);
    await signIn(c, ownerId);
    return c.redirect('/console', 303);
  })
  .post('/console/links', requirePrincipal('operator'), async (c) => {
    const body = (await c.req.json().catch(() => undefined)) as { owner_id?: unknown } | undefined;
    if (typeof body?.owner_id !== 'string' || body.owner_id.length === 0 || body.owner_id.length > 64) {
      throw new DomainError('invalid_request', 'owner_id: the owner to sign in');
    }
    const link = await issueLink(c.var.ports, body.owner_id);
    return c.json({ url: new URL(`/console/link/${link.token}`, c.req.url).toString(), expires_at: new Date(link.expiresAt).toISOString() }, 201);
  })
  .use('/console', requireSession)
  .use('/console/inbox', requireSession)
  .use('/console/sign-out', requireSession)
  .use('/console/approvals/*', requireSession)
  .get('/console', async (c) => c.html(inboxPage(await inboxItems(c), c.var.session.csrfToken, c.var.ports.clock.now(), c.req.query('notice'))))
  .get('/console/inbox', async (c) => c.html(inboxList(await inboxItems(c), c.var.session.csrfToken, c.var.ports.clock.now())))
  .post('/console/sign-out', async (c) => {
    await requireCsrf(c);
    await endSession(c.var.ports, c.var.session);
    deleteCookie(c, COOKIE, { path: '/console' });
    return c.redirect('/console/sign-in', 303);
  })
  .post('/console/approvals/:id/decision', async (c) => {
    const form = await requireCsrf(c);
    const decision = form.decision;
    if (decision !== 'approve' && decision !== 'deny') throw new DomainError('invalid_request', 'decision: approve or deny');
    let notice: string;
    try {
      const decided = await decideApproval(c.var.ports, ownerOf(c.var.session), c.req.param('id'), decision);
      notice = decision === 'approve' ? `Approved: the call ${decided.call.state}.` : 'Denied: the agent was told.';
    } catch (error) {
      if (!(error instanceof DomainError) || !['already_decided', 'run_not_active', 'not_found'].includes(error.code)) throw error;
      notice = `Not decided: ${error.message}.`;
    }
    return c.redirect(`/console?notice=${encodeURIComponent(notice)}`, 303);
  });

/** Only with a live session; without one, the sign-in page (a page) or 401 (the refresh). */
async function requireSession(c: Context<ConsoleEnv>, next: () => Promise<void>): Promise<Response | undefined> {
  const session = await sessionOf(c.var.ports, getCookie(c, COOKIE));
  if (session === undefined) {
    if (c.req.method === 'GET' && c.req.path !== '/console/inbox') return c.redirect('/console/sign-in', 303);
    return c.html(signInPage('Your session has ended; sign in again.'), 401);
  }
  c.set('session', session);
  await next();
  return undefined;
}

/**
 * The form of a post, after checking it carries the session's CSRF token.
 * @throws DomainError('forbidden') when it does not.
 */
async function requireCsrf(c: Context<ConsoleEnv>): Promise<Record<string, string | File>> {
  const form = (await c.req.parseBody()) as Record<string, string | File>;
  if (form.csrf !== c.var.session.csrfToken) throw new DomainError('forbidden', 'the form is not from this session; reload the console');
  return form;
}
