import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from 'cloudflare:test';
import { expect } from 'vitest';
import worker from '../../../edge/worker.ts';
import type { RunView, ToolCallView } from '../../../shared/api.ts';
import type { PolicyProfileView } from '../../../shared/policy.ts';
import { call, type Parties, setLatestPage, setLatestRevision } from './edge-client.ts';

/**
 * Runs and tool-call proposals over the real Worker and D1. The host URL in the test bindings
 * points at a closed loopback port: anything that would be dispatched fails `host_unavailable`
 * without having been sent, which is what tests of the edge's own decisions and state changes
 * need. Dispatch to a real host is covered end to end.
 */

/** The one origin of the runs here. */
export const ORIGIN = 'http://127.0.0.1:8123';
/** The page a "feed" run is on. */
export const PAGE = `${ORIGIN}/feed`;

/** A morning briefing schedule on the feed. */
export const SCHEDULE = {
  cron: '0 7 * * *',
  intent: 'morning briefing: read the feed and summarise it',
  profile_id: 'feed',
  origins: [ORIGIN],
  tool_versions: { 'browser.navigate': '1.2.0', 'browser.observe': '1.2.0', 'browser.act': '1.2.0' },
};
export const SEVEN_AM = Date.UTC(2026, 10, 30, 7, 0, 0);

/** Runs the Worker's cron handler as if it fired at `at`. */
export async function fireSchedules(at: number): Promise<void> {
  const controller = createScheduledController({ scheduledTime: at, cron: '* * * * *' });
  const ctx = createExecutionContext();
  await worker.scheduled(controller, env as never, ctx);
  await waitOnExecutionContext(ctx);
}

/** The fixture's helpers over `parties` (see `partiesForEachTest`). */
export function runFixture(parties: Parties) {
  /** A run the owner asked for (trusted intent, so the turn has user authority), queued for an agent. */
  async function newRun(token = parties.owner.token, extra: Record<string, unknown> = {}): Promise<RunView> {
    const answer = await call<RunView>('POST', '/v1/runs', { token, body: { profile_id: 'demo', intent: 'add a todo', origins: [ORIGIN], ...extra } });
    expect(answer.status).toBe(201);
    return answer.body;
  }

  /** Proposes one tool call on `runId`; `Body` is what the test expects back (`ErrorBody` for a refusal). */
  function propose<Body = ToolCallView>(runId: string, tool: string, args: Record<string, unknown>, token = parties.agent.token, version = '1.2.0') {
    return call<Body>('POST', `/v1/runs/${runId}/tool-calls`, { token, body: { tool, version, arguments: args } });
  }

  /** A click on revision 4 of `runId`, parked for the owner's approval. */
  async function parkedClick(runId: string): Promise<ToolCallView> {
    await setLatestRevision(runId, 4);
    const answer = await propose(runId, 'browser.act', { action: 'click', revision: 4, reference: 'e7' });
    expect(answer.status).toBe(202);
    return answer.body;
  }

  /** An owner's "feed" run, on revision 3 of PAGE; its id. */
  async function ownerRun(extra: Record<string, unknown> = {}): Promise<string> {
    const answer = await call<RunView>('POST', '/v1/runs', {
      token: parties.owner.token,
      body: { profile_id: 'feed', intent: 'read my feed', origins: [ORIGIN], ...extra },
    });
    expect(answer.status).toBe(201);
    await setLatestPage(answer.body.id, 3, PAGE);
    return answer.body.id;
  }

  /** A browser.act on element e5 of revision 3. */
  function act<Body = ToolCallView>(runId: string, args: Record<string, unknown>, token = parties.agent.token) {
    return call<Body>('POST', `/v1/runs/${runId}/tool-calls`, {
      token,
      body: { tool: 'browser.act', version: '1.2.0', arguments: { revision: 3, reference: 'e5', ...args } },
    });
  }

  function tool<Body = ToolCallView>(runId: string, name: string, args: Record<string, unknown>, version = '1.2.0') {
    return call<Body>('POST', `/v1/runs/${runId}/tool-calls`, { token: parties.agent.token, body: { tool: name, version, arguments: args } });
  }

  /** The run's state as its owner reads it. */
  async function runState(runId: string): Promise<RunView['state']> {
    return (await call<RunView>('GET', `/v1/runs/${runId}`, { token: parties.owner.token })).body.state;
  }

  /** The operator publishes a version of policy profile `name`. */
  async function publish(name: string, body: unknown): Promise<PolicyProfileView> {
    const answer = await call<PolicyProfileView>('POST', `/v1/policy-profiles/${name}`, { token: parties.operator.token, body });
    expect(answer.status).toBe(201);
    return answer.body;
  }

  /** Binds the run to policy profile `name`. */
  async function useProfile(runId: string, name: string): Promise<void> {
    await env.DB.prepare('UPDATE runs SET policy_profile = ? WHERE id = ?').bind(name, runId).run();
  }

  return { newRun, propose, parkedClick, ownerRun, act, tool, runState, publish, useProfile };
}
