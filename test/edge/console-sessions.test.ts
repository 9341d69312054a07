import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import { HostCallError } from '../../edge/host/host-session.ts';
import type { Ports } from '../../edge/ports.ts';
import type { RunView } from '../../shared/api.ts';
import { errorBody, partiesForEachTest, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';

// The owner's console, its sessions and its inbox, on the Workers app over the real D1; the host
// is a stand-in. The browser-driven journey is in test/e2e.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8125';
const EDGE = 'http://127.0.0.1:8787';

function consoleApp(now?: () => number) {
  let revision = 0;
  const host = scriptedHost(async (method, params) => {
    if (method === 'lease.acquire' || method === 'lease.renew') {
      return { lease_id: 'lease_console00001', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
    }
    // A picture for the console is no page command: it makes no revision (this stand-in takes none).
    if (method === 'page.screenshot') throw new HostCallError('not_found', 'this stand-in takes no screenshots');
    if (method.startsWith('page.')) return { ...hostPage(`${ORIGIN}/drafts`, ++revision), snapshot: '- button "Save draft" [ref=e2]' };
    return { released: true };
  });
  const app = createApp(() => {
    const ports = workerdPorts(host.connector);
    return (now ? { ...ports, clock: { ...ports.clock, now } } : ports) satisfies Ports;
  });
  const request = (
    method: string,
    path: string,
    init: {
      cookie?: string;
      form?: Record<string, string>;
      json?: unknown;
      token?: string;
      origin?: string;
      base?: string;
      raw?: { type: string; body: string };
    } = {},
  ) =>
    app.request(`${init.base ?? EDGE}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        ...(init.cookie ? { Cookie: init.cookie } : {}),
        ...(init.token ? { Authorization: `Bearer ${init.token}` } : {}),
        ...(init.form ? { 'Content-Type': 'application/x-www-form-urlencoded', Origin: init.origin ?? init.base ?? EDGE } : {}),
        ...(init.json !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...(init.raw ? { 'Content-Type': init.raw.type, Origin: init.origin ?? init.base ?? EDGE } : {}),
      },
      ...(init.raw ? { body: init.raw.body } : {}),
      ...(init.form ? { body: new URLSearchParams(init.form).toString() } : {}),
      ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
    });
  return { request, host, revision: () => revision };
}

/** Signs the owner in with their token; the session cookie and the page's CSRF token. */
async function signedIn(request: ReturnType<typeof consoleApp>['request']) {
  const answer = await request('POST', '/console/sign-in', { form: { token: parties.owner.token } });
  expect(answer.status).toBe(303);
  const cookie = (answer.headers.get('Set-Cookie') ?? '').split(';')[0]!;
  const inbox = await (await request('GET', '/console', { cookie })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(inbox)?.[1];
  return { cookie, csrf: csrf!, inbox };
}

/** A run with one act parked for the owner. */
async function parkedAct(request: ReturnType<typeof consoleApp>['request'], revision: () => number) {
  const created = await request('POST', '/v1/runs', { token: parties.owner.token, json: { profile_id: 'drafts', intent: 'Save my draft', origins: [ORIGIN] } });
  const run = (await created.json()) as RunView;
  const propose = (tool: string, args: unknown) =>
    request('POST', `/v1/runs/${run.id}/tool-calls`, { token: parties.agent.token, json: { tool, version: '1.4.0', arguments: args } });
  await propose('browser.navigate', { url: `${ORIGIN}/drafts` });
  const parked = await propose('browser.act', { action: 'click', revision: revision(), reference: 'e2' });
  expect(parked.status).toBe(202);
  return { run, call: (await parked.json()) as { id: string; approval_id: string } };
}

describe('console sign-in', () => {
  it("exchanges the owner's token for an HttpOnly, SameSite=Strict session cookie scoped to /console, Secure outside loopback", async () => {
    const { request } = consoleApp();
    const local = await request('POST', '/console/sign-in', { form: { token: parties.owner.token } });
    expect(local.status).toBe(303);
    expect(local.headers.get('Location')).toBe('/console');
    const cookie = local.headers.get('Set-Cookie') ?? '';
    expect(cookie).toMatch(/^console_session=[A-Za-z0-9_-]{40,}; Max-Age=28800; Path=\/console; HttpOnly; SameSite=Strict$/);
    const remote = await request('POST', '/console/sign-in', { form: { token: parties.owner.token }, base: 'https://edge.example' });
    expect(remote.headers.get('Set-Cookie')).toContain('; Secure');
    // The session id is stored only as its hash.
    const sessionId = cookie.split(';')[0]!.split('=')[1]!;
    const stored = await env.DB.prepare('SELECT count(*) AS n FROM console_sessions WHERE id_hash = ?').bind(sessionId).first<{ n: number }>();
    expect(stored?.n).toBe(0);
  });

  it('refuses agent and operator tokens and unknown ones, and sets no cookie', async () => {
    const { request } = consoleApp();
    for (const [token, status] of [
      [parties.agent.token, 403],
      [parties.operator.token, 403],
      ['not-a-token-of-anybody-at-all', 401],
    ] as const) {
      const answer = await request('POST', '/console/sign-in', { form: { token } });
      expect(answer.status).toBe(status);
      expect(answer.headers.get('Set-Cookie')).toBeNull();
    }
  });

  it('sends a visitor without a session to the sign-in page, and an ended or expired session too', async () => {
    let now = Date.now();
    const { request } = consoleApp(() => now);
    expect((await request('GET', '/console')).headers.get('Location')).toBe('/console/sign-in');
    const { cookie, csrf } = await signedIn(request);
    expect((await request('GET', '/console', { cookie })).status).toBe(200);
    now += 8 * 60 * 60 * 1000 + 1;
    expect((await request('GET', '/console', { cookie })).headers.get('Location')).toBe('/console/sign-in');
    now = Date.now();
    const again = await signedIn(request);
    expect((await request('POST', '/console/sign-out', { cookie: again.cookie, form: { csrf: again.csrf } })).status).toBe(303);
    expect((await request('GET', '/console', { cookie: again.cookie })).headers.get('Location')).toBe('/console/sign-in');
    expect(csrf).not.toBe(again.csrf);
  });

  it('opens a session once from an operator-issued one-time link, used by a post from its page so a link preview cannot use it up', async () => {
    const { request } = consoleApp();
    const issued = await request('POST', '/console/links', { token: parties.operator.token, json: { owner_id: parties.owner.id } });
    expect(issued.status).toBe(201);
    const { url } = (await issued.json()) as { url: string };
    const path = new URL(url).pathname;
    // Opening it (a preview, a scanner) only shows the button.
    const opened = await request('GET', path);
    expect(opened.status).toBe(200);
    expect(opened.headers.get('Set-Cookie')).toBeNull();
    expect(opened.headers.get('Cache-Control')).toBe('no-store');
    expect(await opened.text()).toContain(`action="${path}"`);
    const first = await request('POST', path, { form: {} });
    expect(first.status).toBe(303);
    expect(first.headers.get('Set-Cookie')).toMatch(/^console_session=/);
    const second = await request('POST', path, { form: {} });
    expect(second.status).toBe(410);
    expect(second.headers.get('Set-Cookie')).toBeNull();
    // Only for an owner that exists.
    const refused = async (token: string, ownerId: string) => {
      const answer = await request('POST', '/console/links', { token, json: { owner_id: ownerId } });
      return { status: answer.status, body: await answer.json() };
    };
    expect(await refused(parties.operator.token, parties.agent.id)).toEqual({ status: 404, body: errorBody('not_found', `no owner ${parties.agent.id}`) });
    expect(await refused(parties.operator.token, 'no such owner!')).toEqual({
      status: 400,
      body: errorBody('invalid_request', 'owner_id: the owner to sign in'),
    });
    expect(await refused(parties.owner.token, parties.owner.id)).toEqual({
      status: 403,
      body: errorBody('forbidden', 'this endpoint is for operator principals, not owner'),
    });
  });
});

describe('console response headers', () => {
  it('sends every page with a strict Content-Security-Policy, no referrer, nosniff and no-store; pages hold no inline script or style', async () => {
    const { request } = consoleApp();
    const { cookie } = await signedIn(request);
    for (const path of ['/console/sign-in', '/console', '/console/runs', '/console/grants', '/console/sign-ins', '/console/profiles', '/console/recipes']) {
      const answer = await request('GET', path, { cookie });
      expect(answer.status, path).toBe(200);
      expect(answer.headers.get('Content-Security-Policy'), path).toBe(
        "default-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'",
      );
      expect(answer.headers.get('Referrer-Policy'), path).toBe('no-referrer');
      expect(answer.headers.get('X-Content-Type-Options'), path).toBe('nosniff');
      expect(answer.headers.get('Cache-Control'), path).toBe('no-store');
      const page = await answer.text();
      expect(page, path).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=/i);
      expect(page, path).toContain('<link rel="stylesheet" href="/console/assets/console.css">');
    }
  });
});

describe('bad forms', () => {
  it('answers a body that is not a form with 400, not 500, and a profile id that cannot be one as not done', async () => {
    const { request, revision } = consoleApp();
    const junk = await request('POST', '/console/sign-in', { raw: { type: 'multipart/form-data; boundary=x', body: 'not a multipart body at all' } });
    expect(junk.status).toBe(400);
    expect(junk.headers.get('Set-Cookie')).toBeNull();
    await parkedAct(request, revision);
    const { cookie, csrf } = await signedIn(request);
    const revoked = await request('POST', `/console/profiles/${'x'.repeat(80)}/revoke`, { cookie, form: { csrf } });
    expect(decodeURIComponent(revoked.headers.get('Location') ?? '')).toContain('Not done');
  });
});

describe('the inbox', () => {
  it('says in words what a parked act will do, on which page, and approving it from the form dispatches it once', async () => {
    const { request, revision, host } = consoleApp();
    const { call } = await parkedAct(request, revision);
    const { cookie, csrf, inbox } = await signedIn(request);
    expect(inbox).toContain('Click the button &quot;Save draft&quot;');
    expect(inbox).toContain('Save my draft');
    expect(inbox).toContain(`${ORIGIN}/drafts`);
    expect(inbox).toContain(`/console/approvals/${call.approval_id}/decision`);
    const decided = await request('POST', `/console/approvals/${call.approval_id}/decision`, { cookie, form: { csrf, decision: 'approve' } });
    expect(decided.status).toBe(303);
    expect(decodeURIComponent(decided.headers.get('Location') ?? '')).toContain('Approved: the call succeeded.');
    expect(host.calls.filter((sent) => sent.method === 'page.act')).toHaveLength(1);
    expect(await (await request('GET', '/console/inbox', { cookie })).text()).toContain('Nothing is waiting for you.');
  });

  it('refuses a decision without the session CSRF token or from another origin, and changes nothing', async () => {
    const { request, revision, host } = consoleApp();
    const { call } = await parkedAct(request, revision);
    const { cookie, csrf } = await signedIn(request);
    const path = `/console/approvals/${call.approval_id}/decision`;
    expect((await request('POST', path, { cookie, form: { decision: 'approve' } })).status).toBe(403);
    expect((await request('POST', path, { cookie, form: { csrf: 'x'.repeat(43), decision: 'approve' } })).status).toBe(403);
    expect((await request('POST', path, { cookie, form: { csrf, decision: 'approve' }, origin: 'https://evil.example' })).status).toBe(403);
    expect((await request('POST', path, { form: { csrf, decision: 'approve' } })).status).toBe(401);
    expect(host.calls.filter((sent) => sent.method === 'page.act')).toHaveLength(0);
    const pending = await env.DB.prepare('SELECT state FROM approvals WHERE id = ?').bind(call.approval_id).first<{ state: string }>();
    expect(pending?.state).toBe('pending');
  });

  it("denying from the console ends the agent's call denied", async () => {
    const { request, revision } = consoleApp();
    const { call } = await parkedAct(request, revision);
    const { cookie, csrf } = await signedIn(request);
    await request('POST', `/console/approvals/${call.approval_id}/decision`, { cookie, form: { csrf, decision: 'deny' } });
    const state = await env.DB.prepare('SELECT state FROM tool_calls WHERE id = ?').bind(call.id).first<{ state: string }>();
    expect(state?.state).toBe('denied');
  });
});

describe('the grant shortcut and the run timeline', () => {
  it('"approve and allow" approves the call and grants the same act on its origin, so the next identical act runs without asking', async () => {
    const { request, revision, host } = consoleApp();
    const { run, call } = await parkedAct(request, revision);
    const { cookie, csrf, inbox } = await signedIn(request);
    expect(inbox).toContain(`lets the agent click on pages of ${ORIGIN} without asking`);
    const decided = await request('POST', `/console/approvals/${call.approval_id}/decision`, {
      cookie,
      form: { csrf, decision: 'approve_and_allow', uses: '2', minutes: '10' },
    });
    expect(decodeURIComponent(decided.headers.get('Location') ?? '')).toContain(`Allowed: click on ${ORIGIN} for 2 uses within 10 minutes.`);
    const next = await request('POST', `/v1/runs/${run.id}/tool-calls`, {
      token: parties.agent.token,
      json: { tool: 'browser.act', version: '1.4.0', arguments: { action: 'click', revision: revision(), reference: 'e2' } },
    });
    expect(next.status).toBe(200);
    expect(host.calls.filter((sent) => sent.method === 'page.act')).toHaveLength(2);
  });

  it('refuses an allowance out of bounds and changes nothing', async () => {
    const { request, revision } = consoleApp();
    const { call } = await parkedAct(request, revision);
    const { cookie, csrf } = await signedIn(request);
    const answer = await request('POST', `/console/approvals/${call.approval_id}/decision`, {
      cookie,
      form: { csrf, decision: 'approve_and_allow', uses: '5000', minutes: '10' },
    });
    expect(answer.status).toBe(400);
    const pending = await env.DB.prepare('SELECT state FROM approvals WHERE id = ?').bind(call.approval_id).first<{ state: string }>();
    expect(pending?.state).toBe('pending');
  });

  it("lists the owner's runs and shows each call of a run with its decision, approval, watermark, dispatch and settle", async () => {
    const { request, revision } = consoleApp();
    const { run, call } = await parkedAct(request, revision);
    const { cookie, csrf } = await signedIn(request);
    await request('POST', `/console/approvals/${call.approval_id}/decision`, { cookie, form: { csrf, decision: 'approve' } });
    const runsPage = await (await request('GET', '/console/runs', { cookie })).text();
    expect(runsPage).toContain(`/console/runs/${run.id}`);
    expect(runsPage).toContain('Save my draft');
    const timeline = await (await request('GET', `/console/runs/${run.id}`, { cookie })).text();
    for (const shown of [
      'Open http://127.0.0.1:8125/drafts',
      'Click the button &quot;Save draft&quot;',
      'approval by rule',
      'approved at',
      'Watermark',
      'answered in',
      'Settle',
    ]) {
      expect(timeline).toContain(shown);
    }
    // Another owner's run is not there for this owner.
    expect((await request('GET', '/console/runs/run_of_nobody', { cookie })).status).toBe(404);
  });
});

describe('grants, sign-ins and profiles in the console', () => {
  it('lists a grant and revokes it from its page; the next act asks the owner again', async () => {
    const { request, revision } = consoleApp();
    const { run, call } = await parkedAct(request, revision);
    const { cookie, csrf } = await signedIn(request);
    await request('POST', `/console/approvals/${call.approval_id}/decision`, {
      cookie,
      form: { csrf, decision: 'approve_and_allow', uses: '3', minutes: '5' },
    });
    const grantsPage = await (await request('GET', '/console/grants', { cookie })).text();
    expect(grantsPage).toContain(`click on ${ORIGIN}`);
    expect(grantsPage).toContain('0 of 3');
    const grantId = /\/console\/grants\/(grt_[A-Za-z0-9_-]+)\/revoke/.exec(grantsPage)?.[1];
    const revoked = await request('POST', `/console/grants/${grantId}/revoke`, { cookie, form: { csrf } });
    expect(decodeURIComponent(revoked.headers.get('Location') ?? '')).toContain('Revoked');
    const next = await request('POST', `/v1/runs/${run.id}/tool-calls`, {
      token: parties.agent.token,
      json: { tool: 'browser.act', version: '1.4.0', arguments: { action: 'click', revision: revision(), reference: 'e2' } },
    });
    expect(next.status).toBe(202);
  });

  it("lists the owner's profiles and revokes one, and says so when there is nothing to restart", async () => {
    const { request, revision } = consoleApp();
    await parkedAct(request, revision);
    const { cookie, csrf } = await signedIn(request);
    const profiles = await (await request('GET', '/console/profiles', { cookie })).text();
    expect(profiles).toContain('Profile drafts');
    const revoked = await request('POST', '/console/profiles/drafts/revoke', { cookie, form: { csrf } });
    expect(decodeURIComponent(revoked.headers.get('Location') ?? '')).toContain('Revoked');
    expect(await (await request('GET', '/console/profiles', { cookie })).text()).toContain('revoked');
    expect(await (await request('GET', '/console/sign-ins', { cookie })).text()).toContain('No sign-ins.');
    const restart = await request('POST', '/console/sign-ins/sie_nothing/restart', { cookie, form: { csrf } });
    expect(decodeURIComponent(restart.headers.get('Location') ?? '')).toContain('Not done');
  });
});
