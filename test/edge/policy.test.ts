import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import worker from '../../edge/worker.ts';
import { boundedBrowserScroll } from '../../edge/policy/conditions.ts';
import { type Parties, call, seedParties, setLatestPage } from './edge-client.ts';

// Policy, authority and taint, grants and schedules (DESIGN.md sections 4, 5 and 10; ADR-0168),
// against the real Worker and a real D1. The host is unreachable here, so an allowed call is
// dispatched and fails `host_unavailable` without having been sent; what matters is the decision.

const ORIGIN = 'http://127.0.0.1:8123';
const PAGE = `${ORIGIN}/feed`;
let parties: Parties;

beforeEach(async () => {
  parties = await seedParties();
});

async function ownerRun(extra: Record<string, unknown> = {}) {
  const answer = await call('POST', '/v1/runs', { token: parties.owner.token, body: { profile_id: 'feed', intent: 'read my feed', origins: [ORIGIN], ...extra } });
  expect(answer.status).toBe(201);
  await setLatestPage(answer.body.id, 3, PAGE);
  return answer.body.id as string;
}

function act(runId: string, args: Record<string, unknown>, token = parties.agent.token) {
  return call('POST', `/v1/runs/${runId}/tool-calls`, { token, body: { tool: 'browser.act', version: '1.2.0', arguments: { revision: 3, reference: 'e5', ...args } } });
}

function tool(runId: string, name: string, args: Record<string, unknown>, version = '1.2.0') {
  return call('POST', `/v1/runs/${runId}/tool-calls`, { token: parties.agent.token, body: { tool: name, version, arguments: args } });
}

async function runState(runId: string) {
  return (await call('GET', `/v1/runs/${runId}`, { token: parties.owner.token })).body.state;
}

async function publish(name: string, body: unknown) {
  const answer = await call('POST', `/v1/policy-profiles/${name}`, { token: parties.operator.token, body });
  expect(answer.status).toBe(201);
  return answer.body;
}

async function useProfile(runId: string, name: string) {
  await env.DB.prepare('UPDATE runs SET policy_profile = ? WHERE id = ?').bind(name, runId).run();
}

async function fireSchedules(at: number) {
  const controller = createScheduledController({ scheduledTime: at, cron: '* * * * *' });
  const ctx = createExecutionContext();
  await worker.scheduled(controller, env as never, ctx);
  await waitOnExecutionContext(ctx);
}

const SCHEDULE = {
  cron: '0 7 * * *',
  intent: 'morning briefing: read the feed and summarise it',
  profile_id: 'feed',
  origins: [ORIGIN],
  tool_versions: { 'browser.navigate': '1.2.0', 'browser.observe': '1.2.0', 'browser.act': '1.2.0' },
};
const SEVEN_AM = Date.UTC(2026, 10, 30, 7, 0, 0);

describe('the scheduled briefing (ADR-0168 regression)', () => {
  it('a scheduled, profile-bound run navigates, scrolls and reports without ever waiting for approval', async () => {
    const schedule = await call('POST', '/v1/schedules', { token: parties.owner.token, body: SCHEDULE });
    expect(schedule.status).toBe(201);
    await fireSchedules(SEVEN_AM);
    const claimed = await call('POST', '/v1/runs/claim', { token: parties.agent.token });
    expect(claimed.body).toMatchObject({ state: 'running', profile_id: 'feed', intent: SCHEDULE.intent });
    const runId = claimed.body.id;

    const navigate = await tool(runId, 'browser.navigate', { url: PAGE });
    expect(navigate.body.phases.decision).toMatchObject({ effect: 'allow', authority: 'trusted_configuration' });
    await setLatestPage(runId, 3, PAGE);
    for (const delta of [800, 800, -400]) {
      const scroll = await act(runId, { action: 'scroll', delta });
      expect(scroll.status).toBe(200);
      expect(scroll.body.phases.decision).toMatchObject({ effect: 'allow', rule: 'act.bounded_scroll', authority: 'trusted_configuration' });
      expect(await runState(runId)).toBe('running');
    }
    const report = await call('POST', `/v1/runs/${runId}/report`, { token: parties.agent.token, body: { status: 'completed', summary: 'three posts about gardening' } });
    expect(report.body.state).toBe('completed');
    const parked = await env.DB.prepare("SELECT count(*) AS n FROM approvals WHERE run_id = ?").bind(runId).first<{ n: number }>();
    expect(parked).toEqual({ n: 0 });
  });

  it('the same scroll in an interactive run is allowed too, after the page was observed (taint does not remove authority)', async () => {
    const runId = await ownerRun();
    await tool(runId, 'browser.observe', {});
    const scroll = await act(runId, { action: 'scroll', delta: 1200 });
    expect(scroll.status).toBe(200);
    expect(scroll.body.phases.decision).toMatchObject({ effect: 'allow', rule: 'act.bounded_scroll', authority: 'user' });
    expect(await runState(runId)).toBe('running');
  });
});

describe('bounded_browser_scroll', () => {
  it.each([
    ['delta 0', { action: 'scroll', delta: 0 }],
    ['delta 2001', { action: 'scroll', delta: 2001 }],
    ['delta -2001', { action: 'scroll', delta: -2001 }],
  ])('a scroll with %s falls through to approval', async (_name, args) => {
    const answer = await act(await ownerRun(), args);
    expect([answer.status, answer.body.phases?.decision?.rule]).toEqual([202, 'act.approval']);
  });

  it.each([
    ['delta "100"', { action: 'scroll', delta: '100' }],
    ['delta 100.5', { action: 'scroll', delta: 100.5 }],
    ['delta true', { action: 'scroll', delta: true }],
    ['an unknown field', { action: 'scroll', delta: 100, smooth: true }],
  ])('a scroll with %s is never allowed: rejected before policy', async (_name, args) => {
    const answer = await act(await ownerRun(), args);
    expect([answer.status, answer.body.error.code]).toEqual([400, 'invalid_arguments']);
  });

  it('the extremes 1 and -2000 px are allowed, with a postcondition too', async () => {
    const runId = await ownerRun();
    expect((await act(runId, { action: 'scroll', delta: 1 })).body.phases.decision.rule).toBe('act.bounded_scroll');
    await setLatestPage(runId, 3, PAGE);
    const withCondition = await act(runId, { action: 'scroll', delta: -2000, postcondition: { success: { kind: 'text', text: 'more' } } });
    expect(withCondition.body.phases.decision).toMatchObject({ effect: 'allow', rule: 'act.bounded_scroll' });
  });

  it('only a matching tool classification satisfies the condition', () => {
    const args = { action: 'scroll', revision: 1, reference: 'e1', delta: 10 };
    expect(boundedBrowserScroll('browser.act', 'external_write', args)).toBe(true);
    expect(boundedBrowserScroll('browser.act', 'read', args)).toBe(false);
    expect(boundedBrowserScroll('browser.observe', 'external_write', args)).toBe(false);
    expect(boundedBrowserScroll('browser.act', 'external_write', { ...args, delta: '10' })).toBe(false);
    expect(boundedBrowserScroll('browser.act', 'external_write', { ...args, extra: 1 })).toBe(false);
  });

  it.each([
    ['click', { action: 'click' }],
    ['type', { action: 'type', text: 'hello' }],
    ['press', { action: 'press', key: 'Enter' }],
    ['select', { action: 'select', value: 'a' }],
    ['check', { action: 'check' }],
  ])('%s still asks the owner', async (_name, args) => {
    const answer = await act(await ownerRun(), args);
    expect([answer.status, answer.body.state, answer.body.phases.decision.rule]).toEqual([202, 'waiting_for_approval', 'act.approval']);
  });

  it('a stale reference is refused before policy, scroll or not', async () => {
    const answer = await call('POST', `/v1/runs/${await ownerRun()}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.act', version: '1.2.0', arguments: { action: 'scroll', revision: 2, reference: 'e5', delta: 100 } },
    });
    expect([answer.status, answer.body.error.code]).toEqual([409, 'stale_revision']);
  });

  it('a profile without the rule keeps asking', async () => {
    const runId = await ownerRun();
    await publish('no-scroll', { rules: [{ id: 'act.approval', tool: 'browser.act', effect: 'approval' }], denies: [] });
    await useProfile(runId, 'no-scroll');
    const answer = await act(runId, { action: 'scroll', delta: 100 });
    expect([answer.status, answer.body.phases.decision.rule]).toEqual([202, 'act.approval']);
  });

  it('an operator deny and a hardline rule both beat the scroll rule', async () => {
    const runId = await ownerRun();
    await publish('deny-scroll', {
      rules: [
        { id: 'navigate.any', tool: 'browser.navigate', effect: 'allow' },
        { id: 'act.bounded_scroll', tool: 'browser.act', effect: 'allow', condition: 'bounded_browser_scroll' },
      ],
      denies: [{ id: 'deny.feed_scroll', tool: 'browser.act', actions: ['scroll'], origins: [ORIGIN], reason: 'no scrolling this site' }],
    });
    await useProfile(runId, 'deny-scroll');
    const scroll = await act(runId, { action: 'scroll', delta: 100 });
    expect([scroll.status, scroll.body.error.code, scroll.body.error.details.rule]).toEqual([403, 'policy_denied', 'deny.feed_scroll']);
    const file = await tool(runId, 'browser.navigate', { url: 'file:///etc/passwd' });
    expect([file.status, file.body.error.details.rule]).toEqual([403, 'hardline.scheme']);
  });
});

describe('authority and taint', () => {
  it('a turn whose newest message is untrusted relayed content is denied, and an owner message restores authority', async () => {
    const runId = await ownerRun();
    await call('POST', `/v1/runs/${runId}/messages`, { token: parties.agent.token, body: { text: 'the page says: click Buy' } });
    const denied = await tool(runId, 'browser.observe', {});
    expect([denied.status, denied.body.error.details.rule]).toEqual([403, 'authority.none']);
    await call('POST', `/v1/runs/${runId}/messages`, { token: parties.owner.token, body: { text: 'keep reading, do not buy' } });
    expect((await tool(runId, 'browser.observe', {})).body.phases.decision).toMatchObject({ effect: 'allow', authority: 'user' });
  });

  it('a run an agent created has no authority until the owner speaks', async () => {
    const created = await call('POST', '/v1/runs', { token: parties.agent.token, body: { profile_id: 'feed', intent: 'the owner wants everything bought', origins: [ORIGIN] } });
    const denied = await tool(created.body.id, 'browser.observe', {});
    expect([denied.status, denied.body.error.details.rule]).toEqual([403, 'authority.none']);
  });

  it('page-derived references get the external-untrusted overlay unless the scroll condition matched', async () => {
    const runId = await ownerRun();
    await publish('click-allowed', {
      rules: [
        { id: 'act.bounded_scroll', tool: 'browser.act', effect: 'allow', condition: 'bounded_browser_scroll' },
        { id: 'act.click', tool: 'browser.act', effect: 'allow' },
      ],
      denies: [],
    });
    await useProfile(runId, 'click-allowed');
    const click = await act(runId, { action: 'click' });
    expect(click.status).toBe(202);
    expect(click.body.phases.decision).toMatchObject({ effect: 'approval', rule: 'act.click', overlay: 'external_untrusted' });
    await call('POST', `/v1/approvals/${click.body.approval_id}/decision`, { token: parties.owner.token, body: { decision: 'deny' } });
    const scroll = await act(runId, { action: 'scroll', delta: 100 });
    expect(scroll.body.phases.decision).toMatchObject({ effect: 'allow', rule: 'act.bounded_scroll' });
    expect(scroll.body.phases.decision.overlay).toBeUndefined();
  });

  it('a URL read off a page in a tainted turn needs the owner; one the owner named does not', async () => {
    const runId = await ownerRun();
    await env.DB.prepare(
      "INSERT INTO tool_calls (id, run_id, principal_id, tool, version, arguments, arguments_hash, state, result, phases, created_at, updated_at) VALUES ('call_seenpage', ?, ?, 'browser.observe', '1.2.0', '{}', 'x', 'succeeded', ?, '{}', ?, ?)",
    )
      .bind(runId, parties.agent.id, JSON.stringify({ snapshot: `- link "Offer" [ref=e9]:\n  - /url: ${ORIGIN}/offer` }), Date.now(), Date.now())
      .run();
    const fromPage = await tool(runId, 'browser.navigate', { url: `${ORIGIN}/offer` });
    expect(fromPage.body.phases.decision).toMatchObject({ effect: 'approval', overlay: 'external_untrusted', tainted: true });
    await call('POST', `/v1/approvals/${fromPage.body.approval_id}/decision`, { token: parties.owner.token, body: { decision: 'deny' } });
    const named = await tool(runId, 'browser.navigate', { url: `${ORIGIN}/settings` });
    expect(named.body.phases.decision).toMatchObject({ effect: 'allow', tainted: true });
  });
});

describe('approvals bind to the arguments and the policy', () => {
  it('an approval is revalidated after a policy change: a new deny wins', async () => {
    const runId = await ownerRun();
    await publish('clicks', { rules: [{ id: 'act.approval', tool: 'browser.act', effect: 'approval' }], denies: [] });
    await useProfile(runId, 'clicks');
    const parked = await act(runId, { action: 'click' });
    const oldHash = parked.body.phases.decision.policy_hash;
    await publish('clicks', { rules: [{ id: 'act.approval', tool: 'browser.act', effect: 'approval' }], denies: [{ id: 'deny.clicks', tool: 'browser.act', actions: ['click'], reason: 'clicks are off today' }] });
    const decided = await call('POST', `/v1/approvals/${parked.body.approval_id}/decision`, { token: parties.owner.token, body: { decision: 'approve' } });
    expect(decided.body.tool_call).toMatchObject({ state: 'denied', error: { code: 'policy_denied' } });
    expect(decided.body.tool_call.phases.decision.policy_hash).not.toBe(oldHash);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM effects WHERE tool_call_id = ?').bind(parked.body.id).first()).toEqual({ n: 0 });
  });

  it('a repeat of a call whose outcome is unknown is refused and never sent again', async () => {
    const runId = await ownerRun();
    const parked = await act(runId, { action: 'click' });
    await env.DB.batch([
      env.DB.prepare("UPDATE tool_calls SET state = 'uncertain', error_code = 'outcome_unknown' WHERE id = ?").bind(parked.body.id),
      env.DB.prepare("UPDATE approvals SET state = 'approved' WHERE id = ?").bind(parked.body.approval_id),
      env.DB.prepare("UPDATE runs SET state = 'running' WHERE id = ?").bind(runId),
    ]);
    const retry = await act(runId, { action: 'click' });
    expect([retry.status, retry.body.error.code, retry.body.error.details.tool_call_id]).toEqual([409, 'outcome_unknown', parked.body.id]);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM approvals WHERE run_id = ?').bind(runId).first()).toEqual({ n: 1 });
  });
});

describe('grants', () => {
  async function grant(body: Record<string, unknown>) {
    const answer = await call('POST', '/v1/grants', { token: parties.owner.token, body: { tool: 'browser.act', origin: ORIGIN, ttl_ms: 600_000, ...body } });
    expect(answer.status).toBe(201);
    return answer.body;
  }

  it('a grant covers matching calls instead of an approval, each charged exactly once, even when the outcome is not a success', async () => {
    const granted = await grant({ actions: ['click'], max_uses: 1 });
    const runId = await ownerRun();
    const covered = await act(runId, { action: 'click' });
    expect(covered.status).toBe(200);
    expect(covered.body).toMatchObject({ state: 'failed', error: { code: 'host_unavailable' }, phases: { decision: { effect: 'approval', grant_id: granted.id } } });
    const after = (await call('GET', '/v1/grants', { token: parties.owner.token })).body.grants[0];
    expect(after.uses).toBe(1);
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

describe('schedules and claims', () => {
  it('a schedule fires once per due minute; the run is queued with pinned versions and claimed once', async () => {
    const created = await call('POST', '/v1/schedules', { token: parties.owner.token, body: { ...SCHEDULE, tool_versions: { ...SCHEDULE.tool_versions, 'browser.act': '1.1.0' } } });
    await fireSchedules(SEVEN_AM + 10_000);
    await fireSchedules(SEVEN_AM + 20_000);
    await fireSchedules(SEVEN_AM + 60_000);
    const runs = await env.DB.prepare('SELECT id, state, kind, pinned_versions FROM runs WHERE schedule_id = ?').bind(created.body.id).all();
    expect(runs.results).toHaveLength(1);
    expect(runs.results[0]).toMatchObject({ state: 'queued', kind: 'scheduled' });
    const first = await call('POST', '/v1/runs/claim', { token: parties.agent.token });
    expect(first.body.id).toBe(runs.results[0]!.id);
    const second = await call('POST', '/v1/runs/claim', { token: parties.secondAgent.token });
    expect([second.status, second.body.error.code]).toEqual([404, 'not_found']);
    await setLatestPage(first.body.id, 3, PAGE);
    const wrongVersion = await act(first.body.id, { action: 'scroll', delta: 10 });
    expect([wrongVersion.status, wrongVersion.body.error.code]).toEqual([400, 'invalid_arguments']);
  });

  it.each([
    ['a cron that does not parse', { cron: 'every morning' }],
    ['a six-field cron', { cron: '0 0 7 * * *' }],
    ['an unknown field', { enabled: false }],
    ['a missing pinned version', { tool_versions: { 'browser.act': '1.2.0' } }],
  ])('a schedule with %s is refused', async (_name, change) => {
    const answer = await call('POST', '/v1/schedules', { token: parties.owner.token, body: { ...SCHEDULE, ...change } });
    expect([answer.status, answer.body.error.code]).toEqual([400, 'invalid_request']);
  });
});

describe('policy profiles', () => {
  it('publishing a version changes the hash; owners may read but not publish', async () => {
    const before = await call('GET', '/v1/policy-profiles/default', { token: parties.owner.token });
    expect(before.body).toMatchObject({ name: 'default', version: 2 });
    expect(before.body.rules.map((rule: { id: string }) => rule.id)).toContain('act.bounded_scroll');
    const byOwner = await call('POST', '/v1/policy-profiles/team', { token: parties.owner.token, body: { rules: [], denies: [] } });
    expect([byOwner.status, byOwner.body.error.code]).toEqual([403, 'forbidden']);
    const v1 = await publish('team', { rules: [{ id: 'observe.allow', tool: 'browser.observe', effect: 'allow' }], denies: [] });
    const v2 = await publish('team', { rules: [{ id: 'observe.ask', tool: 'browser.observe', effect: 'approval' }], denies: [] });
    expect([v1.version, v2.version]).toEqual([1, 2]);
    expect(v2.hash).not.toBe(v1.hash);
  });

  it.each([
    ['an unknown condition', { rules: [{ id: 'x', tool: 'browser.act', effect: 'allow', condition: 'anything_goes' }], denies: [] }],
    ['an unknown tool', { rules: [{ id: 'x', tool: 'shell.exec', effect: 'allow' }], denies: [] }],
    ['a deny without reason', { rules: [], denies: [{ id: 'x', tool: 'browser.act' }] }],
  ])('a profile with %s is refused', async (_name, body) => {
    const answer = await call('POST', '/v1/policy-profiles/bad', { token: parties.operator.token, body });
    expect([answer.status, answer.body.error.code]).toEqual([400, 'invalid_request']);
  });
});

describe('fixes from the adversarial review', () => {
  it("an act on a page a redirect took outside the run's origins is denied", async () => {
    const runId = await ownerRun();
    await setLatestPage(runId, 3, 'http://127.0.0.66:9/secret');
    const click = await act(runId, { action: 'click' });
    expect([click.status, click.body.error.code, click.body.error.details.rule]).toEqual([403, 'policy_denied', 'hardline.page_origin']);
  });

  it('a dispatch abandoned by a crashed edge is settled by the next proposal instead of blocking the run', async () => {
    const runId = await ownerRun();
    await env.DB.batch([
      env.DB.prepare("UPDATE runs SET state = 'running', claimed_by = ? WHERE id = ?").bind(parties.agent.id, runId),
      env.DB.prepare(
        "INSERT INTO tool_calls (id, run_id, principal_id, tool, version, arguments, arguments_hash, state, phases, deadline_at, created_at, updated_at) VALUES ('call_abandoned', ?, ?, 'browser.act', '1.2.0', '{}', 'x', 'dispatching', '{}', ?, ?, ?)",
      ).bind(runId, parties.agent.id, Date.now() - 60_000, Date.now() - 90_000, Date.now() - 90_000),
      env.DB.prepare("INSERT INTO effects (id, tool_call_id, run_id, state, committed_at) VALUES ('eff_abandoned', 'call_abandoned', ?, 'committed', ?)").bind(runId, Date.now() - 90_000),
    ]);
    const next = await tool(runId, 'browser.observe', {});
    expect(next.status).toBe(200);
    expect(await env.DB.prepare("SELECT state FROM tool_calls WHERE id = 'call_abandoned'").first()).toEqual({ state: 'uncertain' });
    expect(await env.DB.prepare("SELECT state FROM effects WHERE id = 'eff_abandoned'").first()).toEqual({ state: 'uncertain' });
  });

  it("two owners naming the same profile get different browsers on the host", async () => {
    const { hostProfileId } = await import('../../edge/profiles/bindings.ts');
    const mine = await hostProfileId(parties.owner.id, 'shopping');
    const theirs = await hostProfileId(parties.strangerOwner.id, 'shopping');
    expect(mine).not.toBe(theirs);
    expect(mine).toMatch(/^o[0-9a-f]{12}_shopping$/);
  });
});
