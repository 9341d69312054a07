import { env, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { proposeToolCall } from '../../../edge/pipeline/propose.ts';
import type { Ports } from '../../../edge/ports.ts';
import { loadRun } from '../../../edge/runs/lifecycle.ts';
import type { RunView, SignInList } from '../../../shared/api.ts';
import type { SignInSignal } from '../../../shared/authentication.ts';
import { backgroundSettled, call, OBSERVED_CONTROLS, partiesForEachTest, row, workerdPorts } from '../support/edge-client.ts';
import { hostPage, scriptedHost } from '../support/fake-host.ts';
import { ORIGIN } from '../support/sign-in-fixture.ts';

// The page verification loads is the page the run was after, never the page it could read
// before the wall; and the host's evidence is recorded on the wait for the owner to read.

const parties = partiesForEachTest();

/** A host on whose page.act the page turns into `signInUrl` with `signal`; observe shows the public page. */
function hostWithWallOnAct(signInUrl: string, signal: SignInSignal) {
  let revision = 0;
  return scriptedHost(async (method, params) => {
    switch (method) {
      case 'lease.acquire':
      case 'lease.renew':
        return { lease_id: 'lease_protectedpage1', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
      case 'page.observe':
        return { ...hostPage(`${ORIGIN}/public`, ++revision), snapshot: `- main [ref=e0]:\n${OBSERVED_CONTROLS}` };
      case 'page.act':
        return { ...hostPage(signInUrl, ++revision), sign_in: signal };
      case 'ceremony.begin':
        return { ceremony_id: params.ceremony_id, state: 'awaiting_person' };
      default:
        return { released: true };
    }
  });
}

async function clickIntoWall(ports: Ports, profile: string) {
  const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
  const created = await call<RunView>('POST', '/v1/runs', {
    token: parties.owner.token,
    body: { profile_id: profile, intent: 'open my reports', origins: [ORIGIN] },
  });
  expect(created.status).toBe(201);
  const runOf = () => loadRun(ports, agent, created.body.id);
  const page = await proposeToolCall(ports, agent, await runOf(), { tool: 'browser.observe', version: '1.2.0', arguments: {} });
  const revision = (page.call.result as { revision: number }).revision;
  await call('POST', '/v1/grants', {
    token: parties.owner.token,
    body: { tool: 'browser.act', actions: ['click'], origin: ORIGIN, max_uses: 5, ttl_ms: 3_600_000 },
  });
  await proposeToolCall(ports, agent, await runOf(), { tool: 'browser.act', version: '1.2.0', arguments: { action: 'click', revision, reference: 'e1' } });
  await backgroundSettled();
  return created.body.id;
}

const IDENTIFIER_FIRST: SignInSignal = {
  origin: ORIGIN,
  reasons: [
    { code: 'identifier_form', detail: 'a visible email field in a form that reads as sign-in ("Sign in")' },
    { code: 'sign_in_heading', detail: 'the title "Sign in – Acme"' },
  ],
  requested_url: `${ORIGIN}/reports`,
};

describe('the protected page of a wall met by an act', () => {
  it('is the document the act asked for when a redirect took it to a sign-in page without a return URL, and the reasons are on the wait', async () => {
    const host = hostWithWallOnAct(`${ORIGIN}/login`, IDENTIFIER_FIRST);
    const runId = await clickIntoWall(workerdPorts(host.connector), 'requested');
    const episode = await row(
      "SELECT protected_url, sign_in_url FROM sign_in_episodes WHERE owner_id = ? AND profile_id = 'requested' AND state = 'open'",
      parties.owner.id,
    );
    expect(episode).toEqual({ protected_url: `${ORIGIN}/reports`, sign_in_url: `${ORIGIN}/login` });
    expect(host.calls.find((c) => c.method === 'ceremony.begin')?.params.protected_url).toBe(`${ORIGIN}/reports`);

    const run = (await call<RunView>('GET', `/v1/runs/${runId}`, { token: parties.owner.token })).body;
    expect(run.state).toBe('waiting_for_authentication');
    expect(run.authentication?.reasons).toEqual(IDENTIFIER_FIRST.reasons);
    const signIns = (await call<SignInList>('GET', '/v1/sign-ins', { token: parties.owner.token })).body.sign_ins;
    expect(signIns.find((episode) => episode.waiting_runs.includes(runId))?.reasons).toEqual(IDENTIFIER_FIRST.reasons);
    // The owner reads the same on the console's Sign-ins page.
    const signedIn = await SELF.fetch('http://127.0.0.1:8787/console/sign-in', {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'http://127.0.0.1:8787' },
      body: new URLSearchParams({ token: parties.owner.token }).toString(),
    });
    const cookie = (signedIn.headers.get('Set-Cookie') ?? '').split(';')[0] ?? '';
    const page = await (await SELF.fetch('http://127.0.0.1:8787/console/sign-ins', { headers: { Cookie: cookie } })).text();
    expect(page).toContain('Why this looks like sign-in');
    expect(page).toContain('a visible email field in a form that reads as sign-in');
  });

  it('is never the page the run read before the wall: without a return URL or a requested document it is the sign-in page itself', async () => {
    const host = hostWithWallOnAct(`${ORIGIN}/login`, {
      origin: ORIGIN,
      reasons: [{ code: 'password_field', detail: 'a visible password field' }],
      requested_url: `${ORIGIN}/public`,
    });
    await clickIntoWall(workerdPorts(host.connector), 'nothing-known');
    const episode = await row(
      "SELECT protected_url FROM sign_in_episodes WHERE owner_id = ? AND profile_id = 'nothing-known' AND state = 'open'",
      parties.owner.id,
    );
    expect(episode?.protected_url).toBe(`${ORIGIN}/login`);
  });

  it('falls back to the last protected page the run reached on that origin: the page of its latest verified sign-in there', async () => {
    const host = hostWithWallOnAct(`${ORIGIN}/login`, { origin: ORIGIN, reasons: [{ code: 'password_field', detail: 'a visible password field' }] });
    const ports = workerdPorts(host.connector);
    // The run's earlier sign-in on the origin was verified on /account.
    const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
    const created = await call<RunView>('POST', '/v1/runs', {
      token: parties.owner.token,
      body: { profile_id: 'reached', intent: 'open my reports', origins: [ORIGIN] },
    });
    await proposeToolCall(ports, agent, await loadRun(ports, agent, created.body.id), { tool: 'browser.observe', version: '1.2.0', arguments: {} });
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO sign_in_episodes (id, owner_id, profile_id, host_profile_id, origin, generation, ceremony_id, state, question, sign_in_url, protected_url, opened_at, resolved_at)
         VALUES ('sie_earlier_reached', ?, 'reached', 'hp', ?, 1, 'cer_earlier_reached', 'resolved', 'q', ?, ?, 1, 2)`,
      ).bind(parties.owner.id, ORIGIN, `${ORIGIN}/login`, `${ORIGIN}/account`),
      env.DB.prepare(
        `INSERT INTO sign_in_waits (id, run_id, episode_id, owner_id, host_profile_id, origin, question, generation, tool_call_id, state, created_at)
         VALUES ('siw_earlier_reached', ?, 'sie_earlier_reached', ?, 'hp', ?, 'q', 1, 'call_x', 'resolved', 1)`,
      ).bind(created.body.id, parties.owner.id, ORIGIN),
    ]);
    const run = await loadRun(ports, agent, created.body.id);
    const revision = run.latestRevision ?? 1;
    await call('POST', '/v1/grants', {
      token: parties.owner.token,
      body: { tool: 'browser.act', actions: ['click'], origin: ORIGIN, max_uses: 5, ttl_ms: 3_600_000 },
    });
    await proposeToolCall(ports, agent, run, { tool: 'browser.act', version: '1.2.0', arguments: { action: 'click', revision, reference: 'e1' } });
    await backgroundSettled();
    const episode = await row("SELECT protected_url FROM sign_in_episodes WHERE owner_id = ? AND profile_id = 'reached' AND state = 'open'", parties.owner.id);
    expect(episode?.protected_url).toBe(`${ORIGIN}/account`);
  });
});
