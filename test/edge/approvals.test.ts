import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { RunView, ToolCallView } from '../../shared/api.ts';
import { type ApprovalList, call, callError, type DecisionResponse, type ErrorBody, partiesForEachTest, row } from './support/edge-client.ts';
import { runFixture } from './support/run-fixture.ts';

// The owner's approvals of parked calls, against the real Worker and D1. The host is unreachable
// here, so an approved call is dispatched and fails `host_unavailable` without having been sent.

const parties = partiesForEachTest();
const { newRun, parkedClick, ownerRun, act, publish, useProfile } = runFixture(parties);

describe('approvals', () => {
  it('the owner denies: the agent reads a denied call and the run runs again', async () => {
    const run = await newRun();
    const parked = await parkedClick(run.id);
    const decided = await call<DecisionResponse>('POST', `/v1/approvals/${parked.approval_id}/decision`, {
      token: parties.owner.token,
      body: { decision: 'deny' },
    });
    expect(decided.status).toBe(200);
    expect(decided.body.approval.state).toBe('denied');
    const seen = await call<ToolCallView>('GET', `/v1/tool-calls/${parked.id}`, { token: parties.agent.token });
    expect(seen.body).toMatchObject({ state: 'denied', error: { code: 'policy_denied', message: 'the owner denied this call' } });
    expect((await call<RunView>('GET', `/v1/runs/${run.id}`, { token: parties.agent.token })).body.state).toBe('running');
    expect(await row('SELECT count(*) AS n FROM effects WHERE tool_call_id = ?', parked.id)).toEqual({ n: 0 });
  });

  it('an approved act commits its watermark before dispatch; a host that cannot be reached leaves it failed, not sent', async () => {
    const run = await newRun();
    const parked = await parkedClick(run.id);
    const decided = await call<DecisionResponse>('POST', `/v1/approvals/${parked.approval_id}/decision`, {
      token: parties.owner.token,
      body: { decision: 'approve' },
    });
    expect(decided.status).toBe(200);
    expect(decided.body.tool_call).toMatchObject({ state: 'failed', error: { code: 'host_unavailable' }, phases: { dispatch: { outcome: 'not_sent' } } });
    expect(decided.body.tool_call.phases.watermark!.effect_id).toMatch(/^eff_/);
    expect(await row('SELECT state FROM effects WHERE tool_call_id = ?', parked.id)).toEqual({ state: 'failed' });
  });

  it('two concurrent approvals of one call: exactly one wins, one watermark', async () => {
    const run = await newRun();
    const parked = await parkedClick(run.id);
    const answers = await Promise.all(
      [0, 1, 2].map(() =>
        call<DecisionResponse | ErrorBody>('POST', `/v1/approvals/${parked.approval_id}/decision`, {
          token: parties.owner.token,
          body: { decision: 'approve' },
        }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409]);
    for (const loser of answers.filter((a) => a.status === 409)) expect('error' in loser.body ? loser.body.error.code : loser.body).toBe('already_decided');
    expect(await row('SELECT count(*) AS n FROM effects WHERE tool_call_id = ?', parked.id)).toEqual({ n: 1 });
  });

  it('agents can never approve, and strangers cannot see the approval', async () => {
    const run = await newRun();
    const parked = await parkedClick(run.id);
    const byAgent = await callError('POST', `/v1/approvals/${parked.approval_id}/decision`, { token: parties.agent.token, body: { decision: 'approve' } });
    expect([byAgent.status, byAgent.body.error.code]).toEqual([403, 'forbidden']);
    const byStranger = await callError('POST', `/v1/approvals/${parked.approval_id}/decision`, {
      token: parties.strangerOwner.token,
      body: { decision: 'approve' },
    });
    expect([byStranger.status, byStranger.body.error.code]).toEqual([404, 'not_found']);
    expect((await call<ApprovalList>('GET', '/v1/approvals?state=pending', { token: parties.strangerOwner.token })).body.approvals).toEqual([]);
  });

  it('cancelling a run fences its pending approval', async () => {
    const run = await newRun();
    const parked = await parkedClick(run.id);
    const cancelled = await call<RunView>('POST', `/v1/runs/${run.id}/cancel`, { token: parties.owner.token });
    expect(cancelled.body.state).toBe('cancelled');
    const late = await callError('POST', `/v1/approvals/${parked.approval_id}/decision`, { token: parties.owner.token, body: { decision: 'approve' } });
    expect([late.status, late.body.error.code]).toEqual([409, 'already_decided']);
    expect((await call<ToolCallView>('GET', `/v1/tool-calls/${parked.id}`, { token: parties.agent.token })).body.state).toBe('cancelled');
    expect(await row('SELECT count(*) AS n FROM effects WHERE tool_call_id = ?', parked.id)).toEqual({ n: 0 });
  });

  it('a call abandoned mid-dispatch past its deadline reads as uncertain and is never resent', async () => {
    const run = await newRun();
    const parked = await parkedClick(run.id);
    // Simulate an edge that died after committing the watermark: dispatching, deadline long gone.
    await env.DB.batch([
      env.DB.prepare("UPDATE tool_calls SET state = 'dispatching', deadline_at = ? WHERE id = ?").bind(Date.now() - 60_000, parked.id),
      env.DB.prepare("INSERT INTO effects (id, tool_call_id, run_id, state, committed_at) VALUES ('eff_lost', ?, ?, 'committed', ?)").bind(
        parked.id,
        run.id,
        Date.now() - 60_000,
      ),
    ]);
    const seen = await call<ToolCallView>('GET', `/v1/tool-calls/${parked.id}`, { token: parties.agent.token });
    expect(seen.body).toMatchObject({ state: 'uncertain', retryable: false, error: { code: 'outcome_unknown' } });
    expect(await row('SELECT state FROM effects WHERE tool_call_id = ?', parked.id)).toEqual({ state: 'uncertain' });
  });

  it('wait_ms long-polls until the call finishes', async () => {
    const run = await newRun();
    const parked = await parkedClick(run.id);
    const waiting = call<ToolCallView>('GET', `/v1/tool-calls/${parked.id}?wait_ms=5000`, { token: parties.agent.token });
    await call('POST', `/v1/approvals/${parked.approval_id}/decision`, { token: parties.owner.token, body: { decision: 'deny' } });
    expect((await waiting).body.state).toBe('denied');
  });
});

describe('approvals bind to the arguments and the policy', () => {
  it('an approval is revalidated after a policy change: a new deny wins', async () => {
    const runId = await ownerRun();
    await publish('clicks', { rules: [{ id: 'act.approval', tool: 'browser.act', effect: 'approval' }], denies: [] });
    await useProfile(runId, 'clicks');
    const parked = await act(runId, { action: 'click' });
    const oldHash = parked.body.phases.decision!.policy_hash;
    await publish('clicks', {
      rules: [{ id: 'act.approval', tool: 'browser.act', effect: 'approval' }],
      denies: [{ id: 'deny.clicks', tool: 'browser.act', actions: ['click'], reason: 'clicks are off today' }],
    });
    const decided = await call<DecisionResponse>('POST', `/v1/approvals/${parked.body.approval_id}/decision`, {
      token: parties.owner.token,
      body: { decision: 'approve' },
    });
    expect(decided.body.tool_call).toMatchObject({ state: 'denied', error: { code: 'policy_denied' } });
    expect(decided.body.tool_call.phases.decision!.policy_hash).not.toBe(oldHash);
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
    const retry = await act<ErrorBody>(runId, { action: 'click' });
    expect([retry.status, retry.body.error.code, retry.body.error.details?.tool_call_id]).toEqual([409, 'outcome_unknown', parked.body.id]);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM approvals WHERE run_id = ?').bind(runId).first()).toEqual({ n: 1 });
  });
});

describe('a decision resumes the run that waits for it, and only that run', () => {
  it('the owner approves: the run runs again, as when denying', async () => {
    const run = await newRun();
    const parked = await parkedClick(run.id);
    const decided = await call<DecisionResponse>('POST', `/v1/approvals/${parked.approval_id}/decision`, {
      token: parties.owner.token,
      body: { decision: 'approve' },
    });
    expect(decided.status).toBe(200);
    expect(await row('SELECT state FROM runs WHERE id = ?', run.id)).toEqual({ state: 'running' });
  });

  it('an approval and a denial racing: one wins, the run runs again once, and call and approval agree', async () => {
    const run = await newRun();
    const parked = await parkedClick(run.id);
    const answers = await Promise.all(
      (['approve', 'deny'] as const).map((decision) =>
        call<DecisionResponse | ErrorBody>('POST', `/v1/approvals/${parked.approval_id}/decision`, { token: parties.owner.token, body: { decision } }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    const loser = answers.find((a) => a.status === 409)!.body;
    expect('error' in loser ? loser.error.code : loser).toBe('already_decided');
    expect(await row('SELECT state FROM runs WHERE id = ?', run.id)).toEqual({ state: 'running' });
    const approval = await row('SELECT state FROM approvals WHERE id = ?', parked.approval_id);
    const stored = await row('SELECT state FROM tool_calls WHERE id = ?', parked.id);
    const effects = await row('SELECT count(*) AS n FROM effects WHERE tool_call_id = ?', parked.id);
    expect([approval?.state, stored?.state, effects?.n]).toEqual(approval?.state === 'approved' ? ['approved', 'failed', 1] : ['denied', 'denied', 0]);
  });

  it('a decision after the run was cancelled resumes nothing', async () => {
    const run = await newRun();
    const parked = await parkedClick(run.id);
    await call('POST', `/v1/runs/${run.id}/cancel`, { token: parties.owner.token });
    for (const decision of ['approve', 'deny']) {
      const late = await callError('POST', `/v1/approvals/${parked.approval_id}/decision`, { token: parties.owner.token, body: { decision } });
      expect([late.status, late.body.error.code]).toEqual([409, 'already_decided']);
    }
    expect(await row('SELECT state FROM runs WHERE id = ?', run.id)).toEqual({ state: 'cancelled' });
  });

  it('a decision after the run passed its deadline ends it instead of resuming it', async () => {
    const run = await newRun();
    const parked = await parkedClick(run.id);
    await env.DB.prepare('UPDATE runs SET deadline_at = ? WHERE id = ?')
      .bind(Date.now() - 1_000, run.id)
      .run();
    const late = await callError('POST', `/v1/approvals/${parked.approval_id}/decision`, { token: parties.owner.token, body: { decision: 'approve' } });
    expect(late.body.error.code).toBe('run_not_active');
    const again = await callError('POST', `/v1/approvals/${parked.approval_id}/decision`, { token: parties.owner.token, body: { decision: 'deny' } });
    expect(again.body.error.code).toBe('already_decided');
    expect(await row('SELECT state FROM runs WHERE id = ?', run.id)).toEqual({ state: 'deadline_exceeded' });
    expect(await row('SELECT state FROM approvals WHERE id = ?', parked.approval_id)).toEqual({ state: 'cancelled' });
    expect(await row('SELECT count(*) AS n FROM effects WHERE tool_call_id = ?', parked.id)).toEqual({ n: 0 });
  });

  it('the database resumes a waiting run when its approval goes from pending to approved or denied, at the decision time', async () => {
    for (const state of ['approved', 'denied']) {
      const run = await newRun();
      const parked = await parkedClick(run.id);
      const decidedAt = Date.now() + 7;
      await env.DB.prepare("UPDATE approvals SET state = ?, decided_at = ? WHERE id = ? AND state = 'pending'")
        .bind(state, decidedAt, parked.approval_id)
        .run();
      expect(await row('SELECT state, updated_at FROM runs WHERE id = ?', run.id)).toEqual({ state: 'running', updated_at: decidedAt });
    }
  });

  it('the database never resumes a run that ended, nor one whose approval was not pending', async () => {
    for (const ended of ['cancelled', 'deadline_exceeded']) {
      const run = await newRun();
      const parked = await parkedClick(run.id);
      await env.DB.prepare('UPDATE runs SET state = ? WHERE id = ?').bind(ended, run.id).run();
      await env.DB.prepare("UPDATE approvals SET state = 'approved', decided_at = ? WHERE id = ?").bind(Date.now(), parked.approval_id).run();
      expect(await row('SELECT state FROM runs WHERE id = ?', run.id)).toEqual({ state: ended });
    }
    const run = await newRun();
    const parked = await parkedClick(run.id);
    await env.DB.prepare("UPDATE approvals SET state = 'cancelled', decided_at = ? WHERE id = ?").bind(Date.now(), parked.approval_id).run();
    await env.DB.prepare("UPDATE approvals SET state = 'approved', decided_at = ? WHERE id = ?").bind(Date.now(), parked.approval_id).run();
    expect(await row('SELECT state FROM runs WHERE id = ?', run.id)).toEqual({ state: 'waiting_for_approval' });
  });
});

describe('decisions racing a cancel never leave the run and its approval apart', () => {
  it('two approvals, a denial and a cancel at once: no 5xx, at most one dispatch, and an ended run stays ended', async () => {
    for (let round = 0; round < 3; round++) {
      const run = await newRun();
      const parked = await parkedClick(run.id);
      const decide = (decision: 'approve' | 'deny') =>
        call<DecisionResponse | ErrorBody>('POST', `/v1/approvals/${parked.approval_id}/decision`, { token: parties.owner.token, body: { decision } });
      const [cancel, ...decisions] = await Promise.all([
        call('POST', `/v1/runs/${run.id}/cancel`, { token: parties.owner.token }),
        decide('approve'),
        decide('approve'),
        decide('deny'),
      ]);
      for (const answer of [cancel, ...decisions]) expect(answer.status).toBeLessThan(500);
      expect(decisions.filter((a) => a.status === 200).length).toBeLessThanOrEqual(1);
      const approval = await row('SELECT state FROM approvals WHERE id = ?', parked.approval_id);
      const stored = await row('SELECT state FROM tool_calls WHERE id = ?', parked.id);
      const effects = await row('SELECT count(*) AS n FROM effects WHERE tool_call_id = ?', parked.id);
      const ended = await row('SELECT state FROM runs WHERE id = ?', run.id);
      // The cancel ends the run whichever came first; the decision that won (if any) agrees with its call.
      expect(ended).toEqual({ state: 'cancelled' });
      expect(stored?.state).not.toBe('waiting_for_approval');
      if (approval?.state === 'approved') expect([stored?.state === 'dispatching', effects?.n]).toEqual([false, 1]);
      else expect([approval?.state, effects?.n]).toEqual([approval?.state === 'denied' ? 'denied' : 'cancelled', 0]);
      if (approval?.state === 'cancelled') expect(stored).toEqual({ state: 'cancelled' });
    }
  });
});
