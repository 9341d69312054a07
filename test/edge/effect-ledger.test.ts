import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import { HostCallError, HostNoAnswer } from '../../edge/host/host-session.ts';
import type { ToolCallView } from '../../shared/api.ts';
import { call, partiesForEachTest, poster, row, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';

// The effect ledger: an external write's watermark is committed before dispatch and ends in the
// state its call ends in, finished at the call's update time, on every path a call leaves
// `dispatching` (drizzle/0022_decision_and_outcome_triggers.sql does it in the call's statement).
// Over the real D1 through the Workers app; the host is a stand-in whose act answer each test picks.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8126';

/** The app over a stand-in host that leases, observes and navigates, and answers `page.act` with `act`. */
function stack(act: (revision: number) => unknown) {
  let revision = 0;
  const host = scriptedHost(async (method, params) => {
    if (method === 'lease.acquire' || method === 'lease.renew') {
      return { lease_id: 'lease_ledger00000001', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
    }
    if (method === 'page.act') return act(++revision);
    if (method === 'page.observe' || method === 'page.navigate') return { ...hostPage(`${ORIGIN}/page`, ++revision), snapshot: '- button "Go" [ref=e2]' };
    return { released: true };
  });
  const post = poster(createApp(() => workerdPorts(host.connector)));
  /** A run on ORIGIN/page whose click on e2 was proposed: parked for the owner, or dispatched under a grant. */
  const proposedClick = async () => {
    const run = await post('/v1/runs', parties.owner.token, { profile_id: 'ledger', intent: 'keep the ledger', origins: [ORIGIN] });
    const runId = String(run.body.id);
    const navigated = await post(`/v1/runs/${runId}/tool-calls`, parties.agent.token, {
      tool: 'browser.navigate',
      version: '1.4.0',
      arguments: { url: `${ORIGIN}/page` },
    });
    expect(navigated.status).toBe(200);
    const clicked = await post(`/v1/runs/${runId}/tool-calls`, parties.agent.token, {
      tool: 'browser.act',
      version: '1.4.0',
      arguments: { action: 'click', revision, reference: 'e2' },
    });
    return { runId, clicked };
  };
  /** A parked click the owner then approved: the decision's answer and the call's id. */
  const approvedClick = async () => {
    const { runId, clicked } = await proposedClick();
    expect(clicked).toMatchObject({ status: 202, body: { state: 'waiting_for_approval' } });
    const decided = await post(`/v1/approvals/${String(clicked.body.approval_id)}/decision`, parties.owner.token, { decision: 'approve' });
    return { runId, callId: String(clicked.body.id), decided };
  };
  return { post, proposedClick, approvedClick };
}

/** The call's state and update time, and its effect's state and finish time. */
async function ledger(callId: string) {
  return {
    call: await row('SELECT state, updated_at FROM tool_calls WHERE id = ?', callId),
    effect: await row('SELECT state, finished_at FROM effects WHERE tool_call_id = ?', callId),
  };
}

/** Expects the effect to have ended in `state` with its call, at the call's update time. */
async function expectEndedWithItsCall(callId: string, state: string) {
  const { call: stored, effect } = await ledger(callId);
  expect(stored?.state).toBe(state);
  expect(effect).toEqual({ state, finished_at: stored?.updated_at });
}

describe('the effect ledger ends with its call', () => {
  it('an approved write that went through: succeeded', async () => {
    const { callId, decided } = await stack((revision) => hostPage(`${ORIGIN}/done`, revision)).approvedClick();
    expect(decided).toMatchObject({ status: 200, body: { tool_call: { state: 'succeeded' } } });
    await expectEndedWithItsCall(callId, 'succeeded');
  });

  it('an approved write the host refused before carrying it out: failed', async () => {
    const { callId, decided } = await stack(() => {
      throw new HostCallError('page_changed', 'the page changed under the act');
    }).approvedClick();
    expect(decided).toMatchObject({ status: 200, body: { tool_call: { state: 'failed', error: { code: 'page_changed' } } } });
    await expectEndedWithItsCall(callId, 'failed');
  });

  it('an approved write whose answer never came: uncertain', async () => {
    const { callId, decided } = await stack(() => {
      throw new HostNoAnswer('connection_lost', 'the connection closed before the answer');
    }).approvedClick();
    expect(decided).toMatchObject({ status: 200, body: { tool_call: { state: 'uncertain', error: { code: 'outcome_unknown' } } } });
    await expectEndedWithItsCall(callId, 'uncertain');
  });

  it('a granted write that was never carried out: failed, and the grant use is given back', async () => {
    const { post, proposedClick } = stack(() => {
      throw new HostCallError('page_changed', 'the page changed under the act');
    });
    const granted = await post('/v1/grants', parties.owner.token, { tool: 'browser.act', origin: ORIGIN, ttl_ms: 600_000, max_uses: 1 });
    expect(granted.status).toBe(201);
    const { clicked } = await proposedClick();
    expect(clicked).toMatchObject({ status: 200, body: { state: 'failed', phases: { decision: { grant_id: granted.body.id } } } });
    await expectEndedWithItsCall(String(clicked.body.id), 'failed');
    expect(await row('SELECT uses FROM grants WHERE id = ?', granted.body.id)).toEqual({ uses: 0 });
    expect(await row('SELECT count(*) AS n FROM grant_uses WHERE tool_call_id = ?', clicked.body.id)).toEqual({ n: 0 });
  });

  it('an outcome whose batch cannot be stored is recorded without its result, and the effect still ends with it', async () => {
    // A stand-in for a result the database refuses: a test trigger refuses the run's new page,
    // so the outcome's batch fails as a whole and the edge records the outcome alone.
    await env.DB.prepare(
      `CREATE TRIGGER test_refuses_done_page BEFORE UPDATE OF latest_url ON runs WHEN NEW.latest_url = '${ORIGIN}/done'
       BEGIN SELECT RAISE(ABORT, 'test: the page cannot be stored'); END`,
    ).run();
    try {
      const { runId, callId, decided } = await stack((revision) => hostPage(`${ORIGIN}/done`, revision)).approvedClick();
      expect(decided).toMatchObject({ status: 200, body: { tool_call: { state: 'succeeded' } } });
      expect(await row('SELECT result FROM tool_calls WHERE id = ?', callId)).toEqual({ result: null });
      expect(await row('SELECT latest_url FROM runs WHERE id = ?', runId)).toEqual({ latest_url: `${ORIGIN}/page` });
      await expectEndedWithItsCall(callId, 'succeeded');
    } finally {
      await env.DB.prepare('DROP TRIGGER test_refuses_done_page').run();
    }
  });

  it('a write abandoned mid-dispatch past its deadline: uncertain, settled when next read', async () => {
    const { runId, clicked } = await stack((revision) => hostPage(`${ORIGIN}/done`, revision)).proposedClick();
    const callId = String(clicked.body.id);
    // An edge that died after committing the watermark: dispatching, deadline long gone.
    const committedAt = Date.now() - 60_000;
    await env.DB.batch([
      env.DB.prepare("UPDATE tool_calls SET state = 'dispatching', deadline_at = ? WHERE id = ?").bind(committedAt, callId),
      env.DB.prepare("INSERT INTO effects (id, tool_call_id, run_id, state, committed_at) VALUES ('eff_ledger_lost', ?, ?, 'committed', ?)").bind(
        callId,
        runId,
        committedAt,
      ),
    ]);
    const seen = await call<ToolCallView>('GET', `/v1/tool-calls/${callId}`, { token: parties.agent.token });
    expect(seen.body).toMatchObject({ state: 'uncertain', error: { code: 'outcome_unknown' } });
    await expectEndedWithItsCall(callId, 'uncertain');
  });

  it('a call that leaves dispatching for a state that is no outcome leaves its watermark committed', async () => {
    const { runId, clicked } = await stack((revision) => hostPage(`${ORIGIN}/done`, revision)).proposedClick();
    const callId = String(clicked.body.id);
    await env.DB.batch([
      env.DB.prepare("UPDATE tool_calls SET state = 'dispatching' WHERE id = ?").bind(callId),
      env.DB.prepare("INSERT INTO effects (id, tool_call_id, run_id, state, committed_at) VALUES ('eff_ledger_kept', ?, ?, 'committed', ?)").bind(
        callId,
        runId,
        Date.now(),
      ),
      env.DB.prepare("UPDATE tool_calls SET state = 'cancelled' WHERE id = ?").bind(callId),
    ]);
    expect((await ledger(callId)).effect).toEqual({ state: 'committed', finished_at: null });
  });
});
