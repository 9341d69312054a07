import { env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import { HostCallError } from '../../edge/host/host-session.ts';
import { decideApproval } from '../../edge/pipeline/approvals.ts';
import { proposeToolCall } from '../../edge/pipeline/propose.ts';
import type { Ports } from '../../edge/ports.ts';
import { loadRun } from '../../edge/runs/lifecycle.ts';
import type { ApprovalView, RunView } from '../../shared/api.ts';
import { call, partiesForEachTest, workerdPorts } from './support/edge-client.ts';
import { scriptedHost } from './support/fake-host.ts';

// Points (issue 33): the host hit-tests an act's point to a reference before anything is decided,
// and from then on the act is a reference act: bound to the target the observation showed, named
// in the approval, sent with the reference. History moves: decided as the navigation to the entry
// the host says they land on. The host is a stand-in; D1 is real.

const ORIGIN = 'http://127.0.0.1:8123';
const ELSEWHERE = 'https://elsewhere.example';
const PAGE = `${ORIGIN}/drafts`;

const parties = partiesForEachTest();

function draftsPage(revision: number, url = PAGE) {
  return {
    revision,
    url,
    title: 'Drafts',
    settle: { outcome: 'dom_quiet', elapsed_ms: 0, pending_at_entry: 0, overflow: false },
    window: { scope: { start_node: 0, end_node: 5, total_nodes: 5 }, truncated: false },
    snapshot: [
      '- main [ref=e1]:',
      '  - button "Save draft" [ref=e2]',
      '  - link "Reports" [ref=e3]:',
      `    - /url: ${ORIGIN}/reports`,
      '  - iframe [ref=e5]',
    ].join('\n'),
    frames: [{ reference: 'e5', origin: 'https://ads.example', withheld: true }],
  };
}

interface Answers {
  /** What `page.hit_test` answers for a point (a reference, or the host's refusal). */
  hit?: (point: { x: number; y: number }) => string | HostCallError;
  /** What `page.history` answers for a move. */
  landing?: (move: string) => string | null;
}

function draftsHost(answers: Answers = {}) {
  let revision = 0;
  return scriptedHost(async (method, params) => {
    switch (method) {
      case 'lease.acquire':
      case 'lease.renew':
        return { lease_id: 'lease_points00001', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
      case 'page.observe':
        return draftsPage(++revision);
      case 'page.hit_test': {
        const found = answers.hit?.(params.point as { x: number; y: number }) ?? 'e2';
        if (found instanceof HostCallError) throw found;
        return { reference: found };
      }
      case 'page.history':
        return { url: answers.landing === undefined ? null : answers.landing(String(params.history)) };
      case 'page.act':
        return draftsPage(++revision);
      case 'page.navigate':
        return draftsPage(++revision, String(params.expected_url ?? params.url));
      default:
        return { released: true };
    }
  });
}

let previousRun: string | undefined;
beforeEach(() => {
  previousRun = undefined;
});

/** A run that observed the drafts page once (revision 1), with the owner's authority. */
async function observedRun(host: ReturnType<typeof draftsHost>) {
  if (previousRun !== undefined) await call('POST', `/v1/runs/${previousRun}/cancel`, { token: parties.owner.token });
  const ports: Ports = workerdPorts(host.connector);
  const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
  const created = await call<RunView>('POST', '/v1/runs', {
    token: parties.owner.token,
    body: { profile_id: 'drafts', intent: 'tidy my drafts', origins: [ORIGIN] },
  });
  expect(created.status).toBe(201);
  previousRun = created.body.id;
  const runOf = () => loadRun(ports, agent, created.body.id);
  const propose = async (tool: 'browser.act' | 'browser.navigate' | 'browser.observe', args: Record<string, unknown>) =>
    proposeToolCall(ports, agent, await runOf(), { tool, version: '1.5.0', arguments: args });
  await propose('browser.observe', {});
  return { ports, runId: created.body.id, propose, act: (args: Record<string, unknown>) => propose('browser.act', { revision: 1, ...args }) };
}

const owner = () => ({ id: parties.owner.id, kind: 'owner' as const, ownerId: parties.owner.id });

async function approvalOf(toolCallId: string): Promise<ApprovalView | undefined> {
  const approvals = (await call<{ approvals: ApprovalView[] }>('GET', '/v1/approvals', { token: parties.owner.token })).body.approvals;
  return approvals.find((candidate) => candidate.tool_call_id === toolCallId);
}

describe('a point is an act on the reference the host finds there', () => {
  it('binds to the resolved reference, and the approval names its role and name and the point', async () => {
    const host = draftsHost({ hit: () => 'e2' });
    const { act } = await observedRun(host);
    const parked = await act({ action: 'click', point: { x: 160, y: 120 } });
    expect(parked.status).toBe(202);
    expect(host.calls.find((entry) => entry.method === 'page.hit_test')?.params).toMatchObject({ revision: 1, point: { x: 160, y: 120 } });
    expect(parked.call.phases).toMatchObject({
      target: { reference: 'e2', role: 'button', name: 'Save draft', frame_origin: ORIGIN, point: { x: 160, y: 120 } },
    });
    const approval = await approvalOf(parked.call.id);
    expect(approval?.summary).toBe(`Click the button "Save draft" (the point 160,120 of the page's picture) on "Drafts" (${PAGE})`);
  });

  it('reaches the host with the resolved reference once approved, never the point or a placeholder', async () => {
    const host = draftsHost({ hit: () => 'e2' });
    const { ports, act } = await observedRun(host);
    const parked = await act({ action: 'click', point: { x: 160, y: 120 } });
    await decideApproval(ports, owner(), parked.approvalId!, 'approve');
    const sent = host.calls.find((entry) => entry.method === 'page.act');
    expect(sent?.params).toMatchObject({
      action: { action: 'click', revision: 1, reference: 'e2' },
      target: { role: 'button', name: 'Save draft', frame_origin: ORIGIN },
    });
    expect(sent?.params.action).not.toHaveProperty('point');
  });

  it('a point on nothing actionable is invalid_arguments, recorded like any rejection, and nothing is sent', async () => {
    const host = draftsHost({ hit: () => new HostCallError('invalid_params', 'point: nothing actionable of revision 1 is at (5, 5)') });
    const { act, runId } = await observedRun(host);
    await expect(act({ action: 'click', point: { x: 5, y: 5 } })).rejects.toMatchObject({
      code: 'invalid_arguments',
      message: expect.stringMatching(/nothing actionable/),
    });
    expect(host.calls.some((entry) => entry.method === 'page.act')).toBe(false);
    const stored = await env.DB.prepare("SELECT state, error_code FROM tool_calls WHERE run_id = ? AND tool = 'browser.act'").bind(runId).all();
    expect(stored.results).toEqual([{ state: 'rejected', error_code: 'invalid_arguments' }]);
  });

  it('a point on a revision the page has left is stale_revision', async () => {
    const host = draftsHost({ hit: () => new HostCallError('stale_revision', 'revision 1 can no longer be pointed at') });
    const { act } = await observedRun(host);
    await expect(act({ action: 'click', point: { x: 160, y: 120 } })).rejects.toMatchObject({ code: 'stale_revision' });
    expect(host.calls.some((entry) => entry.method === 'page.act')).toBe(false);
  });

  it('a point on a foreign frame is denied as an act inside that frame would be', async () => {
    const host = draftsHost({ hit: () => 'e5' });
    const { act } = await observedRun(host);
    await expect(act({ action: 'click', point: { x: 300, y: 300 } })).rejects.toMatchObject({
      code: 'policy_denied',
      details: { rule: 'hardline.frame_origin' },
    });
    expect(host.calls.some((entry) => entry.method === 'page.act')).toBe(false);
  });
});

describe('a history move is decided by the entry it lands on', () => {
  it('back onto a page of the run is allowed as that navigation, and the host is told which entry', async () => {
    const host = draftsHost({ landing: () => `${ORIGIN}/inbox` });
    const { propose } = await observedRun(host);
    const moved = await propose('browser.navigate', { history: 'back' });
    expect(moved.status).toBe(200);
    expect(moved.call.state).toBe('succeeded');
    expect(moved.call.phases).toMatchObject({ decision: { effect: 'allow', rule: 'navigate.run_origins' }, history: { move: 'back', url: `${ORIGIN}/inbox` } });
    expect(host.calls.find((entry) => entry.method === 'page.navigate')?.params).toMatchObject({ history: 'back', expected_url: `${ORIGIN}/inbox` });
  });

  it('back onto another origin is refused exactly like a navigation there', async () => {
    const host = draftsHost({ landing: () => `${ELSEWHERE}/login` });
    const { propose } = await observedRun(host);
    const asNavigation = await propose('browser.navigate', { url: `${ELSEWHERE}/login` }).catch((error: unknown) => error);
    const asHistory = await propose('browser.navigate', { history: 'back' }).catch((error: unknown) => error);
    expect(asNavigation).toMatchObject({ code: 'policy_denied', details: { rule: 'default.navigate' } });
    expect(asHistory).toMatchObject({ code: 'policy_denied', details: { rule: 'default.navigate' } });
    expect(host.calls.some((entry) => entry.method === 'page.navigate')).toBe(false);
  });

  it('a run that holds no page yet is told to observe first, and nothing is asked of a host', async () => {
    const host = draftsHost({ landing: () => `${ORIGIN}/inbox` });
    const ports: Ports = workerdPorts(host.connector);
    const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
    const created = await call<RunView>('POST', '/v1/runs', {
      token: parties.owner.token,
      body: { profile_id: 'fresh', intent: 'go back', origins: [ORIGIN] },
    });
    const run = await loadRun(ports, agent, created.body.id);
    await expect(proposeToolCall(ports, agent, run, { tool: 'browser.navigate', version: '1.5.0', arguments: { history: 'back' } })).rejects.toMatchObject({
      code: 'stale_revision',
      message: expect.stringMatching(/observe the page first/),
    });
    expect(host.calls).toEqual([]);
    await call('POST', `/v1/runs/${created.body.id}/cancel`, { token: parties.owner.token });
  });

  it('a move with no entry to land on is invalid_arguments', async () => {
    const host = draftsHost({ landing: () => null });
    const { propose } = await observedRun(host);
    await expect(propose('browser.navigate', { history: 'forward' })).rejects.toMatchObject({
      code: 'invalid_arguments',
      message: expect.stringMatching(/no next entry/),
    });
  });

  it('a landing page the page itself showed asks the owner, who is shown where it goes and whose approval sends that entry', async () => {
    const host = draftsHost({ landing: () => `${ORIGIN}/reports` });
    const { ports, propose } = await observedRun(host);
    const parked = await propose('browser.navigate', { history: 'back' });
    expect(parked.status).toBe(202);
    expect(parked.call.phases).toMatchObject({ decision: { effect: 'approval', overlay: 'external_untrusted' } });
    expect((await approvalOf(parked.call.id))?.summary).toBe(`Go back in the tab's history to ${ORIGIN}/reports`);
    await decideApproval(ports, owner(), parked.approvalId!, 'approve');
    expect(host.calls.find((entry) => entry.method === 'page.navigate')?.params).toMatchObject({ history: 'back', expected_url: `${ORIGIN}/reports` });
  });
});
