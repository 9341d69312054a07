import { and, eq, isNull } from 'drizzle-orm';
import { Hono } from 'hono';
import { deleteCookie } from 'hono/cookie';
import { csrf } from 'hono/csrf';
import { type ConsoleLinkView, OwnerParam } from '../../shared/api.ts';
import { principalForToken } from '../auth/bearer-token.ts';
import { principals } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { requirePrincipal } from '../http/require-principal.ts';
import { grantsSection } from './grants-section.ts';
import { inboxRoutes } from './inbox.ts';
import { liveViewRoutes } from './live-view-socket.ts';
import { memoriesSection } from './memories-section.ts';
import { CONSOLE_CONTENT_SECURITY_POLICY, linkPage, signInPage } from './pages.ts';
import { profilesSection } from './profiles-section.ts';
import { recipesSection } from './recipes-section.ts';
import { runFilesSection } from './run-files-section.ts';
import { runsSection } from './runs-section.ts';
import { screenshotRoutes } from './screenshots-route.ts';
import { type ConsoleEnv, formOf, requireCsrf, requireSession, SESSION_COOKIE, signIn } from './session-guard.ts';
import { endSession, issueLink, redeemLink } from './sessions.ts';
import { signInsSection } from './sign-ins-section.ts';

// The owner's console, one module per job: session-guard.ts (the cookie, the session and CSRF
// checks), inbox.ts (pending approvals and decisions), one module per section (runs, recipes,
// grants, sign-ins, profiles, memories), live-view-socket.ts, screenshots-route.ts, pages.ts (the templates)
// and assets/ (the style sheet and scripts, static files). This file signs in and out and mounts
// the rest behind the session.

/**
 * The owner's console (issue 15), served by the edge on every runtime: sign-in (the owner's token
 * exchanged once for a session, or a one-time link), the inbox of pending approvals with Approve
 * and Deny, and sign-out. Every form post must come from the console's own origin (`Origin`
 * checked) and carry the session's CSRF token; agent, operator and host tokens cannot open a
 * session. Operators issue one-time links with `POST /console/links {owner_id}`.
 */
export const consoleRoutes = new Hono<ConsoleEnv>()
  .use('/console/*', csrf())
  .use('/console/*', async (c, next) => {
    await next();
    // Nothing the console answers is sniffed into another type, and no address of it leaves as a referrer.
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'no-referrer');
    // Pages of one owner's session: never cached, never framed, and only the console's own files
    // run or style them, so even an escaping mistake could not run what a page put in its text.
    // A route's own policy stands: a download a page typed text/html is served `sandbox`, never
    // under this one, which lets the console's own scripts (and so another download) run.
    if (c.res.headers.get('Content-Type')?.startsWith('text/html')) {
      c.header('Cache-Control', 'no-store');
      if (!c.res.headers.has('Content-Security-Policy')) c.header('Content-Security-Policy', CONSOLE_CONTENT_SECURITY_POLICY);
    }
  })
  .get('/console/sign-in', (c) => c.html(signInPage()))
  .post('/console/sign-in', async (c) => {
    const form = await formOf(c);
    const token = typeof form.token === 'string' ? form.token.trim() : '';
    const principal = await principalForToken(c.var.ports, token).catch((error: unknown) => {
      if (error instanceof DomainError && error.code === 'principal_revoked') return 'revoked' as const;
      throw error;
    });
    if (principal === 'revoked') return c.html(signInPage('That token was revoked.'), 401);
    if (principal === undefined) return c.html(signInPage('That token is not known.'), 401);
    if (principal.kind !== 'owner') return c.html(signInPage(`Only an owner's token opens the console; this is an ${principal.kind} token.`), 403);
    await signIn(c, principal.ownerId);
    return c.redirect('/console', 303);
  })
  // Opening a link only shows a button: a link scanner's fetch does not use it up, and the
  // session starts from a same-site post, so the Strict cookie is sent on the way to the inbox.
  .get('/console/link/:token', (c) => c.html(linkPage(c.req.param('token'))))
  .post('/console/link/:token', async (c) => {
    const ownerId = await redeemLink(c.var.ports, c.req.param('token'));
    if (ownerId === undefined) return c.html(signInPage('That sign-in link was used already or has expired.'), 410);
    await signIn(c, ownerId);
    return c.redirect('/console', 303);
  })
  .post('/console/links', requirePrincipal('operator'), async (c) => {
    const body = (await c.req.json().catch(() => undefined)) as { owner_id?: unknown } | undefined;
    const ownerId = OwnerParam.shape.owner_id.safeParse(body?.owner_id);
    if (!ownerId.success) throw new DomainError('invalid_request', 'owner_id: the owner to sign in');
    const owner = await c.var.ports.db
      .select({ id: principals.id })
      .from(principals)
      .where(and(eq(principals.id, ownerId.data), eq(principals.kind, 'owner'), isNull(principals.revokedAt)))
      .get();
    if (owner === undefined) throw new DomainError('not_found', `no owner ${ownerId.data}`);
    const link = await issueLink(c.var.ports, owner.id);
    const view: ConsoleLinkView = { url: new URL(`/console/link/${link.token}`, c.req.url).toString(), expires_at: new Date(link.expiresAt).toISOString() };
    return c.json(view, 201);
  })
  .use('/console', requireSession)
  .use('/console/inbox', requireSession)
  .use('/console/sign-out', requireSession)
  .use('/console/approvals/*', requireSession)
  .use('/console/runs/*', requireSession)
  .use('/console/grants/*', requireSession)
  .use('/console/sign-ins/*', requireSession)
  .use('/console/profiles/*', requireSession)
  .use('/console/recipes', requireSession)
  .use('/console/memories', requireSession)
  .use('/console/memories/*', requireSession)
  .use('/console/memory-suggestions/*', requireSession)
  .use('/console/screenshots/*', requireSession)
  .use('/console/live/*', requireSession)
  .post('/console/sign-out', async (c) => {
    await requireCsrf(c);
    await endSession(c.var.ports, c.var.session);
    deleteCookie(c, SESSION_COOKIE, { path: '/console' });
    return c.redirect('/console/sign-in', 303);
  })
  .route('/', inboxRoutes)
  .route('/', runsSection)
  .route('/', runFilesSection)
  .route('/', recipesSection)
  .route('/', grantsSection)
  .route('/', signInsSection)
  .route('/', liveViewRoutes)
  .route('/', profilesSection)
  .route('/', memoriesSection)
  .route('/', screenshotRoutes);
