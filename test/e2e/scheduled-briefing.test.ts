import { describe, expect, vi } from 'vitest';
import { observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import { startFixtureServer } from '../support/fixture-server.ts';
import { stackTest } from '../support/stack-fixture.ts';

// ADR-0168's story in real processes and real Chromium: the owner's morning schedule fires from
// the Worker's cron trigger, an agent claims the run, reads the feed, scrolls and reports without
// a single approval; and a consequential act whose answer is lost ends uncertain, exactly once.
const it = stackTest();

describe('the scheduled briefing', () => {
  it('a scheduled, profile-bound run navigates, scrolls and reports without ever waiting for approval', async ({ stack, site, agent, owner }) => {
    const schedule = await owner.request('POST', '/v1/schedules', (await import('../../shared/api.ts')).ScheduleView, {
      cron: '* * * * *',
      intent: 'Morning briefing: read my feed and summarise it',
      profile_id: 'briefing',
      origins: [site.origin],
      tool_versions: { 'browser.navigate': '1.2.0', 'browser.observe': '1.2.0', 'browser.act': '1.2.0' },
    });
    expect(schedule.status).toBe(201);
    await stack.triggerCron();
    const claimed = await agent.request('POST', '/v1/runs/claim', (await import('../../shared/api.ts')).RunView);
    const run = claimed.body;
    expect(run).toMatchObject({ state: 'running', profile_id: 'briefing' });

    let page = observationOf((await agent.propose(run.id, 'browser.navigate', { url: site.url('briefing/feed.html') })).body);
    const states: string[] = [];
    for (const delta of [700, 700, 700]) {
      const scroll = await agent.propose(run.id, 'browser.act', {
        action: 'scroll',
        revision: page.revision,
        reference: refOf(page.snapshot, 'heading', 'Your feed'),
        delta,
      });
      expect(scroll.status).toBe(200);
      expect(scroll.body.phases.decision).toMatchObject({ effect: 'allow', rule: 'act.bounded_scroll', authority: 'trusted_configuration' });
      page = observationOf(scroll.body);
      states.push((await agent.run(run.id)).state);
    }
    const ended = await agent.report(run.id, 'completed', 'Four posts about gardening: sun, mulch, compost, watering.');
    expect(ended.state).toBe('completed');
    expect(states).toEqual(['running', 'running', 'running']);
    // The page really scrolled: the site saw it.
    await vi.waitFor(() => expect(site.hits('scrolled')).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
    const [approvals] = await stack.queryD1(`SELECT count(*) AS n FROM approvals WHERE run_id = '${run.id}'`);
    expect(approvals).toEqual([{ n: 0 }]);
  });
});

describe("a page that tries to leave the run's origins", () => {
  it("a script's navigation to another origin never happens: the page stays, the observation says what was blocked, nothing of the other page is seen", async ({
    stack,
    site,
    agent,
    owner,
  }) => {
    const elsewhere = await startFixtureServer();
    try {
      const run = await owner.createRun({ profile_id: 'leaving', intent: 'read the page', origins: [site.origin] });
      const secret = elsewhere.url('briefing/secret.html');
      const leave = `${site.url('briefing/leave.html')}?to=${encodeURIComponent(secret)}`;
      const opened = await agent.propose(run.id, 'browser.navigate', { url: leave }, '1.3.0');
      expect(opened.body).toMatchObject({ state: 'succeeded' });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const seen = observationOf((await agent.propose(run.id, 'browser.observe', {}, '1.3.0')).body);
      expect(seen.url).toBe(leave);
      const blocked = [...(observationOf(opened.body).blocked ?? []), ...(seen.blocked ?? [])];
      expect(blocked).toContainEqual(expect.objectContaining({ origin: elsewhere.origin, kind: 'navigation', reason: 'outside_run_origins' }));
      const [stored] = await stack.queryD1(
        `SELECT count(*) AS n FROM tool_calls WHERE run_id = '${run.id}' AND instr(coalesce(result, ''), 'sk-not-for-agents') > 0`,
      );
      expect(stored).toEqual([{ n: 0 }]);
    } finally {
      await elsewhere.close();
    }
  });
});

// Last: this one kills the host.
describe('response loss', () => {
  it("the host's connection is cut after dispatch: the call ends uncertain, and the server sees exactly one effect, also after the agent retries", async ({
    stack,
    site,
    agent,
    owner,
  }) => {
    const run = await owner.createRun({ profile_id: 'orders', intent: 'confirm my order', origins: [site.origin] });
    const page = observationOf((await agent.propose(run.id, 'browser.navigate', { url: site.url('briefing/slow-confirm.html') })).body);
    const args = { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Confirm order') };
    const proposal = await agent.propose(run.id, 'browser.act', args);
    expect(proposal.status).toBe(202);
    const decided = owner.decide(proposal.body.approval_id!, 'approve');
    // Cut the host off once the click reached the server, before the host could answer.
    await vi.waitFor(() => expect(site.hits('confirm')).toBe(1), { timeout: 20_000, interval: 20 });
    await stack.killHost();
    const call = (await decided).tool_call;
    expect(call).toMatchObject({ state: 'uncertain', retryable: false, error: { code: 'outcome_unknown' } });

    const retry = await agent.raw('POST', `/v1/runs/${run.id}/tool-calls`, { tool: 'browser.act', version: '1.2.0', arguments: args });
    expect(retry).toMatchObject({ status: 409, body: { error: { code: 'outcome_unknown', details: { tool_call_id: call.id } } } });
    expect(site.hits('confirm')).toBe(1);
    const [effects] = await stack.queryD1(`SELECT state FROM effects WHERE run_id = '${run.id}'`);
    expect(effects).toEqual([{ state: 'uncertain' }]);
  });
});
