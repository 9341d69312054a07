import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { type ApprovalList, call, type ErrorBody, partiesForEachTest, setLatestRevision } from './support/edge-client.ts';
import { runFixture } from './support/run-fixture.ts';

// Proposing tool calls: what the edge refuses before any decision, and how it settles a call a
// crashed edge left behind. The host is unreachable here (a closed port).

const parties = partiesForEachTest();
const { newRun, propose, parkedClick, ownerRun, tool } = runFixture(parties);

describe('proposing a tool call', () => {
  it('an act on a revision other than the latest fails stale_revision and asks nobody', async () => {
    const run = await newRun();
    await setLatestRevision(run.id, 5);
    const answer = await propose<ErrorBody>(run.id, 'browser.act', { action: 'click', revision: 4, reference: 'e7' });
    expect([answer.status, answer.body.error.code]).toEqual([409, 'stale_revision']);
    expect((await call<ApprovalList>('GET', '/v1/approvals?state=pending', { token: parties.owner.token })).body.approvals).toEqual([]);
  });

  it('a second proposal while one waits for approval is refused', async () => {
    const run = await newRun();
    await parkedClick(run.id);
    const answer = await propose<ErrorBody>(run.id, 'browser.observe', {});
    expect([answer.status, answer.body.error.code]).toEqual([409, 'run_not_active']);
  });

  it('a dispatch abandoned by a crashed edge is settled by the next proposal instead of blocking the run', async () => {
    const runId = await ownerRun();
    await env.DB.batch([
      env.DB.prepare("UPDATE runs SET state = 'running', claimed_by = ? WHERE id = ?").bind(parties.agent.id, runId),
      env.DB.prepare(
        "INSERT INTO tool_calls (id, run_id, principal_id, tool, version, arguments, arguments_hash, state, phases, deadline_at, created_at, updated_at) VALUES ('call_abandoned', ?, ?, 'browser.act', '1.2.0', '{}', 'x', 'dispatching', '{}', ?, ?, ?)",
      ).bind(runId, parties.agent.id, Date.now() - 60_000, Date.now() - 90_000, Date.now() - 90_000),
      env.DB.prepare("INSERT INTO effects (id, tool_call_id, run_id, state, committed_at) VALUES ('eff_abandoned', 'call_abandoned', ?, 'committed', ?)").bind(
        runId,
        Date.now() - 90_000,
      ),
    ]);
    const next = await tool(runId, 'browser.observe', {});
    expect(next.status).toBe(200);
    expect(await env.DB.prepare("SELECT state FROM tool_calls WHERE id = 'call_abandoned'").first()).toEqual({ state: 'uncertain' });
    expect(await env.DB.prepare("SELECT state FROM effects WHERE id = 'eff_abandoned'").first()).toEqual({ state: 'uncertain' });
  });
});
