import { and, desc, eq, inArray } from 'drizzle-orm';
import type { Context } from 'hono';
import { Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { csrf } from 'hono/csrf';
import { html } from 'hono/html';
import { z } from 'zod';
import { type CallPhases, type ConsoleLinkView, CreateGrantBody, OwnerParam, RunProfileId } from '../../shared/api.ts';
import { httpStatusOf } from '../../shared/errors.ts';
import { MAX_VIEW_EDGE_PX } from '../../shared/live-view.ts';
import { ActionKind } from '../../shared/tool-arguments.ts';
import { ownerScreenshot, screenshotsOfCalls, screenshotsOfRun } from '../artifacts/screenshots.ts';
import { principalForToken } from '../auth/bearer-token.ts';
import { isLoopbackHostname } from '../auth/loopback.ts';
import type { Principal } from '../auth/principal.ts';
import {
  type ArtifactRow,
  type ConsoleSessionRow,
  notices,
  principals,
  profileBindings,
  runs,
  signInWaits,
  type ToolCallRow,
  toolCalls,
} from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { createGrant, listGrants, revokeGrant } from '../grants/grants.ts';
import type { AppEnv } from '../http/app-env.ts';
import { requirePrincipal } from '../http/require-principal.ts';
import { decideApproval, listApprovals } from '../pipeline/approvals.ts';
import { callSummary } from '../pipeline/views.ts';
import { profileInForce } from '../policy/profile.ts';
import type { Ports } from '../ports.ts';
import { revokeProfile } from '../profiles/revocation.ts';
import { listRecipes } from '../recipes/catalog.ts';
import { eventsOf } from '../recipes/progress.ts';
import { claimLiveView, issueLiveViewLink, type LiveViewRelay, readLiveViewLink, relayLiveView } from '../sign-in/live-view.ts';
import { listNotices, listSignIns, restartSignIn } from '../sign-in/owner-views.ts';
import {
  CONSOLE_CONTENT_SECURITY_POLICY,
  humanDuration,
  type InboxItem,
  inboxList,
  inboxPage,
  type ListedThing,
  layout,
  linkPage,
  listPage,
  liveViewPage,
  type Picture,
  runPage,
  runsPage,
  signInPage,
  type TimelineEntry,
} from './pages.ts';
import { endSession, issueLink, openSession, redeemLink, SESSION_TTL_MS, sessionOf } from './sessions.ts';

/** The session cookie: HttpOnly, SameSite=Strict, only under `/console`; Secure outside loopback. */
const COOKIE = 'console_session';

type ConsoleEnv = AppEnv & { Variables: { session: ConsoleSessionRow } };

/** Starts a session for `ownerId` and sets its cookie. */
async function signIn(c: Context<ConsoleEnv>, ownerId: string): Promise<void> {
  const opened = await openSession(c.var.ports, ownerId);
  setCookie(c, COOKIE, opened.sessionId, {
    httpOnly: true,
    sameSite: 'Strict',
    path: '/console',
    secure: !isLoopbackHostname(new URL(c.req.url).hostname),
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
    if (c.res.headers.get('Content-Type')?.startsWith('text/html')) {
      c.header('Cache-Control', 'no-store');
      c.header('Content-Security-Policy', CONSOLE_CONTENT_SECURITY_POLICY);
    }
  })
  .get('/console/sign-in', (c) => c.html(signInPage()))
  .post('/console/sign-in', async (c) => {
    const form = await formOf(c);
    const token = typeof form.token === 'string' ? form.token.trim() : '';
    const principal = await principalForToken(c.var.ports, token);
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
      .where(and(eq(principals.id, ownerId.data), eq(principals.kind, 'owner')))
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
  .use('/console/screenshots/*', requireSession)
  .use('/console/live/*', requireSession)
  .get('/console', async (c) => c.html(inboxPage(await inboxItems(c), c.var.session.csrfToken, c.var.ports.clock.now(), c.req.query('notice'))))
  .get('/console/inbox', async (c) => c.html(inboxList(await inboxItems(c), c.var.session.csrfToken, c.var.ports.clock.now())))
  .post('/console/sign-out', async (c) => {
    await requireCsrf(c);
    await endSession(c.var.ports, c.var.session);
    deleteCookie(c, COOKIE, { path: '/console' });
    return c.redirect('/console/sign-in', 303);
  })
  .get('/console/runs', async (c) => {
    const rows = await c.var.ports.db
      .select({ id: runs.id, intent: runs.intent, state: runs.state, createdAt: runs.createdAt, deadlineAt: runs.deadlineAt })
      .from(runs)
      .where(eq(runs.ownerId, c.var.session.ownerId))
      .orderBy(desc(runs.createdAt))
      .limit(RUNS_LISTED);
    return c.html(runsPage(rows, c.var.session.csrfToken, c.var.ports.clock.now()));
  })
  .get('/console/runs/:id', async (c) => {
    const run = await c.var.ports.db
      .select()
      .from(runs)
      .where(eq(runs.id, c.req.param('id')))
      .get();
    if (!run || run.ownerId !== c.var.session.ownerId)
      return c.html(layout('Not found', html`<p>No such run.</p>`, { csrfToken: c.var.session.csrfToken }), 404);
    const recipe = run.recipeId === null ? null : `${run.recipeId} version ${run.recipeVersion} (hash ${run.recipeHash?.slice(0, 12)})`;
    return c.html(runPage({ ...run, report: run.reportSummary, recipe }, await timelineOf(c.var.ports, run.id, run.ownerId), c.var.session.csrfToken));
  })
  // The reviewed recipe catalog, read-only: only the operator publishes (issue 19).
  .get('/console/recipes', async (c) => {
    const things = (await listRecipes(c.var.ports)).map(
      (recipe): ListedThing => ({
        title: `${recipe.id} (version ${recipe.version})`,
        details: [
          ['Asked as', recipe.phrases.map((phrase) => `"${phrase}"`).join(', ')],
          ['Site', recipe.origin],
          ['State', recipe.in_use ? 'in use' : !recipe.enabled ? 'disabled' : 'not reviewed (names no fixture)'],
          ['Reviewed against', recipe.reviewed_fixture || 'nothing'],
          ['Steps', recipe.steps.map((step, index) => `${index + 1}. ${step.title}`).join(' ')],
          ...(recipe.fields.length > 0 ? ([['Needs from your message', recipe.fields.join(', ')]] as const) : []),
          ['Hash', recipe.hash],
        ],
      }),
    );
    return c.html(
      listPage(
        '/console/recipes',
        'Reviewed recipes',
        things,
        c.var.session.csrfToken,
        'No recipes: the catalog is empty until the operator publishes one (POST /v1/recipes/{id}).',
      ),
    );
  })
  // A screenshot of the owner's (issue 15); another owner's, or one whose retention ended, is 404.
  .get('/console/screenshots/:id', async (c) => {
    const found = await ownerScreenshot(c.var.ports, c.var.session.ownerId, c.req.param('id'));
    if (found === undefined) throw new DomainError('not_found', 'no such picture (it may have been removed by retention)');
    return c.body(found.bytes as Uint8Array<ArrayBuffer>, 200, {
      'Content-Type': 'image/jpeg',
      // Not kept in the browser's cache: gone with sign-out and with retention.
      'Cache-Control': 'private, no-store',
      'X-Content-Type-Options': 'nosniff',
    });
  })
  .get('/console/grants', async (c) => {
    const rows = await listGrants(c.var.ports, ownerOf(c.var.session));
    const now = c.var.ports.clock.now();
    const things = rows.map(
      (grant): ListedThing => ({
        title: `${grant.actions?.join(', ') ?? 'every act'} on ${grant.origin}`,
        details: [
          ['Uses', `${grant.uses} of ${grant.maxUses}`],
          ['Expires', grant.expiresAt > now ? `in ${humanDuration(grant.expiresAt - now)}` : 'expired'],
          ['Policy', grant.policyProfile],
          ['State', grant.revokedAt !== null ? 'revoked' : grant.expiresAt <= now || grant.uses >= grant.maxUses ? 'spent' : 'live'],
        ],
        ...(grant.revokedAt === null && grant.expiresAt > now ? { actions: [{ path: `/console/grants/${grant.id}/revoke`, label: 'Revoke' }] } : {}),
      }),
    );
    return c.html(listPage('/console/grants', 'Grants', things, c.var.session.csrfToken, 'No grants.', c.req.query('notice')));
  })
  .post('/console/grants/:id/revoke', async (c) => {
    await requireCsrf(c);
    const notice = await refusalAsNotice(async () => {
      await revokeGrant(c.var.ports, ownerOf(c.var.session), c.req.param('id'));
      return 'Revoked: later acts are no longer covered.';
    });
    return c.redirect(`/console/grants?notice=${encodeURIComponent(notice)}`, 303);
  })
  .get('/console/sign-ins', async (c) => {
    const owner = ownerOf(c.var.session);
    const [{ sign_ins }, { notices: ownerNotices }] = await Promise.all([listSignIns(c.var.ports, owner, undefined), listNotices(c.var.ports, owner)]);
    const things = [
      ...sign_ins.map(
        (episode): ListedThing => ({
          title: `Sign in to ${episode.origin} (profile ${episode.profile_id})`,
          details: [
            ['State', episode.state],
            ['Ceremony', episode.ceremony_state ?? 'not started'],
            ['Question', episode.question],
            ['Why this looks like sign-in', episode.reasons.map((reason) => reason.detail).join('; ') || 'no run waits now'],
            ['Runs waiting', episode.waiting_runs.join(', ') || 'none'],
            ['Opened', episode.opened_at],
          ],
          actions:
            episode.state === 'open'
              ? [
                  { path: `/console/sign-ins/${episode.id}/live-view`, label: 'Open the live view' },
                  { path: `/console/sign-ins/${episode.id}/restart`, label: 'Restart the sign-in window' },
                ]
              : [],
        }),
      ),
      ...ownerNotices.map(
        (notice): ListedThing => ({
          title: `Notice: ${notice.text}`,
          details: [
            ['Run', notice.run_id],
            ['Sent', notice.created_at],
            ['Resolved', notice.resolved_at ?? 'not yet'],
          ],
        }),
      ),
    ];
    return c.html(listPage('/console/sign-ins', 'Sign-ins and notices', things, c.var.session.csrfToken, 'No sign-ins.', c.req.query('notice')));
  })
  // A single-use link to the episode's live view, bound to this session, 5 minutes to connect.
  .post('/console/sign-ins/:id/live-view', async (c) => {
    await requireCsrf(c);
    try {
      const link = await issueLiveViewLink(c.var.ports, c.var.session, c.req.param('id'));
      return c.redirect(`/console/live/${link.token}`, 303);
    } catch (error) {
      if (!(error instanceof DomainError) || error.code !== 'not_found') throw error;
      return c.redirect(`/console/sign-ins?notice=${encodeURIComponent(`Not done: ${error.message}.`)}`, 303);
    }
  })
  .get('/console/live/:token', async (c) => {
    try {
      const grant = await readLiveViewLink(c.var.ports, c.var.session, c.req.param('token'));
      return c.html(liveViewPage(c.req.param('token'), grant.origin, c.var.session.csrfToken));
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      return c.html(layout('Live view', html`<p class="error" role="alert">${error.message}.</p>`, { csrfToken: c.var.session.csrfToken }), 404);
    }
  })
  // The view's socket: the link is used here, once, by the session it was issued to.
  .get('/console/live/:token/socket', async (c) => {
    const upgrade = c.var.ports.upgradeWebSocket;
    if (upgrade === undefined) throw new DomainError('not_found', 'this edge has no live view');
    if (c.req.header('Upgrade')?.toLowerCase() !== 'websocket') throw new DomainError('invalid_request', 'the live view is a WebSocket');
    // A page of another site cannot open it with the owner's cookie (cross-site WebSocket hijacking).
    if (c.req.header('Origin') !== new URL(c.req.url).origin) throw new DomainError('forbidden', 'the live view opens only from the console');
    const grant = await claimLiveView(c.var.ports, c.var.session, c.req.param('token'));
    const size = (value: string | undefined, fallback: number) => Math.min(MAX_VIEW_EDGE_PX, Math.max(64, Math.round(Number(value) || fallback)));
    const width = size(c.req.query('w'), 1280);
    const height = size(c.req.query('h'), 720);
    const ports = c.var.ports;
    let relay: LiveViewRelay | undefined;
    let starting = false;
    const early: string[] = [];
    let closedEarly = false;
    // The page speaks first (`hello`): Workers' server sockets have no open event, so the relay
    // starts with the first message, the same on every runtime.
    return upgrade(c, {
      onMessage: (event, socket) => {
        const text = typeof event.data === 'string' ? event.data : '';
        if (relay !== undefined) return relay.fromViewer(text);
        if (!starting) {
          starting = true;
          void relayLiveView(ports, grant, socket, width, height).then((started) => {
            relay = started;
            for (const queued of early.splice(0)) started.fromViewer(queued);
            if (closedEarly) started.viewerClosed();
          });
        } else if (early.length < 16) early.push(text);
      },
      onClose: () => {
        if (relay !== undefined) relay.viewerClosed();
        else closedEarly = true;
      },
    });
  })
  .post('/console/sign-ins/:id/restart', async (c) => {
    await requireCsrf(c);
    const notice = await refusalAsNotice(async () => {
      const restarted = await restartSignIn(c.var.ports, ownerOf(c.var.session), c.req.param('id'));
      return `Restarted: the sign-in window is at generation ${restarted.generation}.`;
    });
    return c.redirect(`/console/sign-ins?notice=${encodeURIComponent(notice)}`, 303);
  })
  .get('/console/profiles', async (c) => {
    // Every profile the owner's runs used, with its binding (made at its first sign-in) when there is one.
    const [bindings, used] = await Promise.all([
      c.var.ports.db.select().from(profileBindings).where(eq(profileBindings.ownerId, c.var.session.ownerId)),
      c.var.ports.db.selectDistinct({ profileId: runs.profileId }).from(runs).where(eq(runs.ownerId, c.var.session.ownerId)).limit(RUNS_LISTED),
    ]);
    const stateOf = new Map(bindings.map((binding) => [binding.profileId, binding.state]));
    const profiles = [...new Set([...used.map((row) => row.profileId), ...stateOf.keys()])].sort();
    const things = profiles.map((profileId): ListedThing => {
      const state = stateOf.get(profileId) ?? 'active';
      return {
        title: `Profile ${profileId}`,
        details: [['State', state]],
        ...(state === 'active' ? { actions: [{ path: `/console/profiles/${encodeURIComponent(profileId)}/revoke`, label: 'Revoke this profile' }] } : {}),
      };
    });
    return c.html(listPage('/console/profiles', 'Browser profiles', things, c.var.session.csrfToken, 'No profiles yet.', c.req.query('notice')));
  })
  .post('/console/profiles/:profile/revoke', async (c) => {
    await requireCsrf(c);
    const notice = await refusalAsNotice(async () => {
      const profile = RunProfileId.safeParse(c.req.param('profile'));
      if (!profile.success) throw new DomainError('not_found', 'no such profile');
      await revokeProfile(c.var.ports, ownerOf(c.var.session), profile.data);
      return 'Revoked: its waiting runs failed and new runs on it are refused.';
    });
    return c.redirect(`/console/profiles?notice=${encodeURIComponent(notice)}`, 303);
  })
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
  const form = await formOf(c);
  if (typeof form.csrf !== 'string' || !sameSecret(form.csrf, c.var.session.csrfToken)) {
    throw new DomainError('forbidden', 'the form is not from this session; reload the console');
  }
  return form;
}

/** Most runs the runs page lists. */
const RUNS_LISTED = 100;

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

/** A kept screenshot as the console shows it. */
function pictureOf(row: ArtifactRow | undefined): Picture | undefined {
  return row === undefined ? undefined : { id: row.id, width: row.width, height: row.height, box: row.box ?? null };
}

/** A run's timeline, oldest first: its calls (each with the picture of the page after it, when kept), sign-in waits and notices. */
async function timelineOf(ports: Ports, runId: string, ownerId: string): Promise<TimelineEntry[]> {
  const [calls, waits, runNotices, pictures] = await Promise.all([
    ports.db
      .select({
        id: toolCalls.id,
        tool: toolCalls.tool,
        version: toolCalls.version,
        arguments: toolCalls.arguments,
        state: toolCalls.state,
        phases: toolCalls.phases,
        errorCode: toolCalls.errorCode,
        errorMessage: toolCalls.errorMessage,
        createdAt: toolCalls.createdAt,
      })
      .from(toolCalls)
      .where(eq(toolCalls.runId, runId))
      .orderBy(desc(toolCalls.createdAt))
      .limit(TIMELINE_CALLS),
    ports.db.select().from(signInWaits).where(eq(signInWaits.runId, runId)).orderBy(signInWaits.createdAt),
    ports.db.select().from(notices).where(eq(notices.runId, runId)).orderBy(notices.createdAt),
    screenshotsOfRun(ports, ownerId, runId),
  ]);
  const recipeSteps = await eventsOf(ports, runId);
  const entries: TimelineEntry[] = [
    ...calls.map((call): TimelineEntry => {
      const phases = (call.phases ?? {}) as CallPhases;
      const details: Array<readonly [string, string]> = [['State', call.state.replaceAll('_', ' ')]];
      if (phases.decision) details.push(['Decision', `${phases.decision.effect} by rule ${phases.decision.rule}`]);
      if (phases.approval) details.push(['Approval', `${phases.approval.decision} at ${phases.approval.at}`]);
      if (phases.watermark) details.push(['Watermark', `effect ${phases.watermark.effect_id} committed at ${phases.watermark.committed_at}`]);
      if (phases.dispatch)
        details.push([
          'Dispatch',
          `${phases.dispatch.outcome ?? 'started'}${phases.dispatch.elapsed_ms !== undefined ? ` in ${phases.dispatch.elapsed_ms} ms` : ''}`,
        ]);
      if (phases.settle) details.push(['Settle', `${phases.settle.outcome} after ${phases.settle.elapsed_ms} ms`]);
      if (phases.postcondition) details.push(['Postcondition', `${phases.postcondition.status} after ${phases.postcondition.observations} observation(s)`]);
      if (call.errorCode) details.push(['Error', `${call.errorCode}: ${call.errorMessage ?? ''}`]);
      const thumbnail = pictureOf(pictures.get(call.id)?.after);
      return { at: call.createdAt, what: callSummary(call), details, ...(thumbnail ? { thumbnail } : {}) };
    }),
    ...waits.map(
      (wait): TimelineEntry => ({
        at: wait.createdAt,
        what: `Waiting for sign-in on ${wait.origin}`,
        details: [['State', wait.state], ...(wait.fenceReason ? ([['Ended', wait.fenceReason]] as const) : [])],
      }),
    ),
    ...runNotices.map((notice): TimelineEntry => ({ at: notice.createdAt, what: 'Notice to you', details: [['Text', notice.text]] })),
    // A recipe-bound run's steps, with their evidence and calls (issue 19).
    ...recipeSteps.map(
      (event): TimelineEntry => ({
        at: event.createdAt,
        what: `Recipe${event.step === null ? '' : ` step ${event.step + 1}`}: ${event.summary}`,
        details: [
          ['Kind', event.kind.replaceAll('_', ' ')],
          ...(event.toolCallId ? ([['Call', event.toolCallId]] as const) : []),
          ...(Object.keys(event.evidence).length > 0 ? ([['Evidence', JSON.stringify(event.evidence).slice(0, 400)]] as const) : []),
        ],
      }),
    ),
  ];
  return entries.sort((a, b) => a.at - b.at);
}

/** What an owner's action answered, in words: its success, or the API's refusal (not found, already decided). */
async function refusalAsNotice(act: () => Promise<string>): Promise<string> {
  try {
    return await act();
  } catch (error) {
    if (error instanceof DomainError && httpStatusOf(error.code) < 500) return `Not done: ${error.message}.`;
    throw error;
  }
}

/** Most calls a run's timeline shows: the newest ones. */
const TIMELINE_CALLS = 500;

/**
 * The fields of a posted form (urlencoded or multipart).
 * @throws DomainError('invalid_request') for a body that is not a form.
 */
async function formOf(c: Context<ConsoleEnv>): Promise<Record<string, string | File>> {
  try {
    return (await c.req.parseBody()) as Record<string, string | File>;
  } catch {
    throw new DomainError('invalid_request', 'the body is not a form');
  }
}

/** Compares two secrets in time that depends on their length only. */
function sameSecret(given: string, expected: string): boolean {
  if (given.length !== expected.length) return false;
  let difference = 0;
  for (let index = 0; index < given.length; index++) difference |= given.charCodeAt(index) ^ expected.charCodeAt(index);
  return difference === 0;
}

/** The action kind of a stored `browser.act` call (`click`, `type`, ...), if its arguments name one. */
function actionOf(call: Pick<ToolCallRow, 'arguments'>): ActionKind | undefined {
  return ActionKind.safeParse((call.arguments as { action?: unknown } | null)?.action).data;
}
