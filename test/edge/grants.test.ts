import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { GrantView } from '../../shared/api.ts';
import { call, type GrantList, partiesForEachTest, setLatestPage } from './support/edge-client.ts';
import { ORIGIN, PAGE, runFixture } from './support/run-fixture.ts';

// Grants: the owner lets calls of one scope run without asking, a bounded number of times. The
// host is unreachable here, so a covered call fails `host_unavailable` without having been sent.

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

  it('a grant covers matching calls instead of an approval, each charged exactly once, even when the outcome is not a success', async () => {
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
    expect(after!.uses).toBe(1);
    await setLatestPage(runId, 3, PAGE);
    const next = await act(runId, { action: 'click' });
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
    const runIds = await Promise.all([0, 1, 2, 3, 4].map(() => ownerRun()));
    const answers = await Promise.all(runIds.map((runId) => act(runId, { action: 'click' })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 202, 202, 202]);
    const row = await env.DB.prepare('SELECT uses FROM grants WHERE id = ?').bind(granted.id).first();
    expect(row).toEqual({ uses: 2 });
    expect(await env.DB.prepare('SELECT count(*) AS n FROM grant_uses WHERE grant_id = ?').bind(granted.id).first()).toEqual({ n: 2 });
  });
});

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
    expect(view).toMatchObject({ uses: 1, not_covering: 'policy_changed', revoked_at: null });
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
    expect((await call('POST', path, { token: parties.owner.token })).status).toBe(403);
    const voided = await call<{ revoked: number; policy_hash: string }>('POST', path, { token: parties.operator.token });
    expect(voided.status).toBe(200);
    expect(voided.body).toMatchObject({ revoked: 2, policy_hash: first.policy_hash });
    expect((await act(await runUnder('grants-voided'), { action: 'click' })).status).toBe(202);
    const views = (await call<GrantList>('GET', '/v1/grants', { token: parties.owner.token })).body.grants;
    for (const id of [first.id, second.id]) expect(views.find((grant) => grant.id === id)?.revoked_at).not.toBeNull();
    expect((await call('POST', '/v1/policy-profiles/grants-voided/versions/99/revoke-grants', { token: parties.operator.token })).status).toBe(404);
  });
});
