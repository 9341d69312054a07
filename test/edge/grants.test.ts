import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { HostNoAnswer } from '../../edge/host/host-session.ts';
import { proposeToolCall } from '../../edge/pipeline/propose.ts';
import { loadRun } from '../../edge/runs/lifecycle.ts';
import type { GrantView } from '../../shared/api.ts';
import { call, errorBody, type GrantList, partiesForEachTest, setLatestPage, workerdPorts } from './support/edge-client.ts';
import { scriptedHost } from './support/fake-host.ts';
import { ORIGIN, PAGE, runFixture } from './support/run-fixture.ts';

// Grants: the owner lets calls of one scope run without asking, a bounded number of times. The
// host is unreachable here, so a covered call fails `host_unavailable` without having been sent
// (and its use is given back); where a use must stay charged, a stand-in host leaves the act's
// outcome unknown.

const parties = partiesForEachTest();
const { ownerRun, act } = runFixture(parties);

describe('grants', () => {
  async function grant(body: Record<string, unknown>) {
    const answer = await call<GrantView>('POST', '/v1/grants', {
      token: parties.owner.token,
      body: { tool: 'browser.act', origin: ORIGIN, ttl_ms: 600_000, ...body },
    });
    expect(answer.status).toBe(201);
    return answer.body;
  }

  it('a grant covers matching calls instead of an approval; a use whose act was never sent is given back', async () => {
    const granted = await grant({ actions: ['click'], max_uses: 1 });
    const runId = await ownerRun();
    const covered = await act(runId, { action: 'click' });
    expect(covered.status).toBe(200);
    expect(covered.body).toMatchObject({
      state: 'failed',
      error: { code: 'host_unavailable' },
      phases: { decision: { effect: 'approval', grant_id: granted.id } },
    });
    const after = (await call<GrantList>('GET', '/v1/grants', { token: parties.owner.token })).body.grants[0];
    expect(after!.uses).toBe(0);
    await setLatestPage(runId, 3, PAGE);
    expect((await act(runId, { action: 'click' })).status).toBe(200);
  });

  it('each use of an act that may have happened is charged exactly once; an exhausted grant covers nothing', async () => {
    const granted = await grant({ actions: ['click'], max_uses: 1 });
    const ports = workerdPorts(unknownOutcomeHost().connector);
    const runId = await leasedRun();
    const covered = await proposeToolCall(ports, agentOf(), await loadRun(ports, agentOf(), runId), clickOnE5);
    expect(covered.call).toMatchObject({ state: 'uncertain', errorCode: 'outcome_unknown' });
    expect(covered.call.phases).toMatchObject({ decision: { grant_id: granted.id } });
    const after = (await call<GrantList>('GET', '/v1/grants', { token: parties.owner.token })).body.grants[0];
    expect(after!.uses).toBe(1);
    // Another profile: the first run still holds the feed's browser.
    const next = await act(await ownerRun({ profile_id: 'news' }), { action: 'click' });
    expect(next.status).toBe(202);
  });

  it('does not cover other actions, other origins or a revoked grant', async () => {
    const granted = await grant({ actions: ['click'], max_uses: 5 });
    const typed = await act(await ownerRun(), { action: 'type', text: 'x' });
    expect(typed.status).toBe(202);
    const elsewhere = await ownerRun({ origins: [ORIGIN, 'http://127.0.0.2:8123'] });
    await setLatestPage(elsewhere, 3, 'http://127.0.0.2:8123/feed');
    expect((await act(elsewhere, { action: 'click' })).status).toBe(202);
    await call('POST', `/v1/grants/${granted.id}/revoke`, { token: parties.owner.token });
    expect((await act(await ownerRun(), { action: 'click' })).status).toBe(202);
  });

  it('concurrent calls never charge more uses than the grant has', async () => {
    const granted = await grant({ max_uses: 2 });
    const ports = workerdPorts(unknownOutcomeHost().connector);
    const runIds = await Promise.all([0, 1, 2, 3, 4].map(() => leasedRun()));
    const answers = await Promise.all(runIds.map(async (runId) => proposeToolCall(ports, agentOf(), await loadRun(ports, agentOf(), runId), clickOnE5)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 202, 202, 202]);
    const row = await env.DB.prepare('SELECT uses FROM grants WHERE id = ?').bind(granted.id).first();
    expect(row).toEqual({ uses: 2 });
    expect(await env.DB.prepare('SELECT count(*) AS n FROM grant_uses WHERE grant_id = ?').bind(granted.id).first()).toEqual({ n: 2 });
  });
});

/** An owner's run on revision 3 of the feed that holds a lease of the stand-in host. */
async function leasedRun(): Promise<string> {
  const runId = await ownerRun();
  await env.DB.prepare('UPDATE runs SET lease_id = ?, lease_expires_at = ? WHERE id = ?')
    .bind('lease_grantsunknown1', Date.now() + 300_000, runId)
    .run();
  return runId;
}

/** The agent of `parties`, as the pipeline's principal. */
function agentOf() {
  return { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
}

/** The click `act` sends, as a proposal. */
const clickOnE5 = { tool: 'browser.act', version: '1.2.0', arguments: { action: 'click', revision: 3, reference: 'e5' } } as const;

/** A stand-in host that leases, then loses the connection after an act was sent (the act's outcome is unknown). */
function unknownOutcomeHost() {
  return scriptedHost(async (method, params) => {
    if (method === 'lease.acquire' || method === 'lease.renew') {
      return { lease_id: 'lease_grantsunknown1', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
    }
    if (method === 'page.act') throw new HostNoAnswer('connection_lost', 'the connection closed before the answer');
    return { released: true };
  });
}

describe('grants and the policy they were made under', () => {
  const { publish, useProfile } = runFixture(parties);
  const asking = (extra: unknown[] = []) => ({
    rules: [{ id: 'act.ask', tool: 'browser.act', effect: 'approval' }, { id: 'observe.allow', tool: 'browser.observe', effect: 'allow' }, ...extra],
    denies: [],
  });

  async function grantUnder(profile: string) {
    const answer = await call<GrantView>('POST', '/v1/grants', {
      token: parties.owner.token,
      body: { tool: 'browser.act', origin: ORIGIN, ttl_ms: 600_000, max_uses: 5, policy_profile: profile },
    });
    expect(answer.status).toBe(201);
    return answer.body;
  }

  async function runUnder(profile: string): Promise<string> {
    const runId = await ownerRun();
    await useProfile(runId, profile);
    return runId;
  }

  it('a grant made under one version no longer covers once the operator publishes another: the call asks the owner, and the view says why', async () => {
    await publish('grants-versioned', asking());
    const granted = await grantUnder('grants-versioned');
    expect(granted).toMatchObject({ policy_profile: 'grants-versioned', not_covering: null });
    expect((await act(await runUnder('grants-versioned'), { action: 'click' })).status).toBe(200);

    await publish('grants-versioned', asking([{ id: 'navigate.ask', tool: 'browser.navigate', effect: 'approval' }]));
    const after = await act(await runUnder('grants-versioned'), { action: 'click' });
    expect(after.status).toBe(202);
    expect(after.body.phases.decision?.grant_id).toBeUndefined();
    const view = (await call<GrantList>('GET', '/v1/grants', { token: parties.owner.token })).body.grants.find((grant) => grant.id === granted.id);
    expect(view).toMatchObject({ not_covering: 'policy_changed', revoked_at: null });
  });

  it('a grant covers runs of its own policy profile only', async () => {
    await publish('grants-own', asking());
    await publish('grants-other', asking());
    await grantUnder('grants-own');
    expect((await act(await runUnder('grants-other'), { action: 'click' })).status).toBe(202);
    expect((await act(await runUnder('grants-own'), { action: 'click' })).status).toBe(200);
  });

  it('the operator revokes every grant of one profile version at once; owners cannot', async () => {
    const published = await publish('grants-voided', asking());
    const first = await grantUnder('grants-voided');
    const second = await grantUnder('grants-voided');
    const path = `/v1/policy-profiles/grants-voided/versions/${published.version}/revoke-grants`;
    expect(await call('POST', path, { token: parties.owner.token })).toEqual({
      status: 403,
      body: errorBody('forbidden', 'this endpoint is for operator principals, not owner'),
    });
    const voided = await call<{ revoked: number; policy_hash: string }>('POST', path, { token: parties.operator.token });
    expect(voided.status).toBe(200);
    expect(voided.body).toMatchObject({ revoked: 2, policy_hash: first.policy_hash });
    expect((await act(await runUnder('grants-voided'), { action: 'click' })).status).toBe(202);
    const views = (await call<GrantList>('GET', '/v1/grants', { token: parties.owner.token })).body.grants;
    for (const id of [first.id, second.id]) expect(views.find((grant) => grant.id === id)?.revoked_at).not.toBeNull();
    expect(await call('POST', '/v1/policy-profiles/grants-voided/versions/99/revoke-grants', { token: parties.operator.token })).toEqual({
      status: 404,
      body: errorBody('not_found', 'policy profile grants-voided has no version 99'),
    });
  });
});
