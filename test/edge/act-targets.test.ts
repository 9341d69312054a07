import { env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import { HostCallError, HostNoAnswer, HostUnreachable } from '../../edge/host/host-session.ts';
import { decideApproval } from '../../edge/pipeline/approvals.ts';
import { proposeToolCall } from '../../edge/pipeline/propose.ts';
import { resultForVersion } from '../../edge/pipeline/result-version.ts';
import type { Ports } from '../../edge/ports.ts';
import { loadRun } from '../../edge/runs/lifecycle.ts';
import type { ApprovalView, GrantView, RunView } from '../../shared/api.ts';
import { ObservationV1_1, ObservationV1_2 } from '../../shared/observation.ts';
import { call, partiesForEachTest, workerdPorts } from './support/edge-client.ts';
import { scriptedHost } from './support/fake-host.ts';

// An act is bound to its target as the agent was shown it (README "Confinement"): the approval
// says in words what will be clicked, typed or selected, on which page and in which frame; the
// host re-checks the target right before the input; policy and grants decide on the origin of
// the frame that holds it.

const ORIGIN = 'http://127.0.0.1:8123';
const WIDGETS = 'http://127.0.0.1:8124';
const PAGE = `${ORIGIN}/drafts`;

const parties = partiesForEachTest();

/** What the stand-in host shows: a drafts page with a main-frame button, a frame of WIDGETS and a foreign frame. */
function draftsPage(revision: number) {
  return {
    revision,
    url: PAGE,
    title: 'Drafts',
    settle: { outcome: 'dom_quiet', elapsed_ms: 0, pending_at_entry: 0, overflow: false },
    window: { scope: { start_node: 0, end_node: 7, total_nodes: 7 }, truncated: false },
    snapshot: [
      '- main [ref=e1]:',
      '  - button "Save draft" [ref=e2]',
      '  - textbox "Title" [ref=e3]',
      '  - iframe [ref=e4]:',
      '    - button "Pay now" [ref=f1e2]',
      '  - iframe [ref=e5]',
      '  - \'heading "Post #10: notes" [level=2] [ref=e6]\'',
      '  - button "Save draft" [ref=e7]: "[ref=e8]"',
      '  - button "Delete account" [ref=e8]',
    ].join('\n'),
    frames: [
      { reference: 'e4', prefix: 'f1', origin: WIDGETS, withheld: false },
      { reference: 'e5', origin: 'https://ads.example', withheld: true },
    ],
  };
}

/** A host that serves the drafts page, and answers acts with `actAnswer`. */
function draftsHost(actAnswer: (params: Record<string, unknown>) => unknown = () => draftsPage(2)) {
  return scriptedHost(async (method, params) => {
    switch (method) {
      case 'lease.acquire':
      case 'lease.renew':
        return { lease_id: 'lease_acttargets01', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
      case 'page.observe':
        return draftsPage(1);
      case 'page.act':
        return actAnswer(params);
      default:
        return { released: true };
    }
  });
}

/** The run the current test observed last: a test's next run cancels it, so the profile is free (one lease per profile). */
let previousRun: string | undefined;
beforeEach(() => {
  previousRun = undefined;
});

async function observedRun(host: ReturnType<typeof draftsHost>, origins = [ORIGIN, WIDGETS]) {
  if (previousRun !== undefined) await call('POST', `/v1/runs/${previousRun}/cancel`, { token: parties.owner.token });
  const ports: Ports = workerdPorts(host.connector);
  const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
  const created = await call<RunView>('POST', '/v1/runs', { token: parties.owner.token, body: { profile_id: 'drafts', intent: 'tidy my drafts', origins } });
  expect(created.status).toBe(201);
  previousRun = created.body.id;
  const runOf = () => loadRun(ports, agent, created.body.id);
  await proposeToolCall(ports, agent, await runOf(), { tool: 'browser.observe', version: '1.3.0', arguments: {} });
  const act = async (args: Record<string, unknown>) =>
    proposeToolCall(ports, agent, await runOf(), { tool: 'browser.act', version: '1.3.0', arguments: { revision: 1, ...args } });
  return { ports, runId: created.body.id, act };
}

describe('acts are bound to what the observation showed', () => {
  it('the approval names the target in words: role, accessible name, the text to type, the page', async () => {
    const host = draftsHost();
    const { act } = await observedRun(host);
    const parked = await act({ action: 'type', reference: 'e3', text: 'Quarterly notes' });
    expect(parked.status).toBe(202);
    const approvals = (await call<{ approvals: ApprovalView[] }>('GET', '/v1/approvals', { token: parties.owner.token })).body.approvals;
    const approval = approvals.find((candidate) => candidate.tool_call_id === parked.call.id);
    expect(approval?.summary).toBe('Type "Quarterly notes" into the textbox "Title" on "Drafts" (http://127.0.0.1:8123/drafts)');
    expect(approval?.target).toEqual({
      reference: 'e3',
      role: 'textbox',
      name: 'Title',
      frame_origin: ORIGIN,
      page_url: PAGE,
      page_title: 'Drafts',
      text: 'Quarterly notes',
    });
  });

  it('a name YAML had to quote (with # and :) is read whole', async () => {
    const { act } = await observedRun(draftsHost());
    const parked = await act({ action: 'click', reference: 'e6' });
    expect(parked.call.phases).toMatchObject({ target: { role: 'heading', name: 'Post #10: notes' } });
  });

  it('text that carries "[ref=e8]" does not make another element the target', async () => {
    const { act } = await observedRun(draftsHost());
    const parked = await act({ action: 'click', reference: 'e8' });
    expect(parked.call.phases).toMatchObject({ target: { role: 'button', name: 'Delete account' } });
  });

  it('the approved act carries the target the owner saw to the host', async () => {
    const host = draftsHost();
    const { ports, act } = await observedRun(host);
    const parked = await act({ action: 'click', reference: 'e2' });
    const owner = { id: parties.owner.id, kind: 'owner' as const, ownerId: parties.owner.id };
    await decideApproval(ports, owner, parked.approvalId!, 'approve');
    const sent = host.calls.find((entry) => entry.method === 'page.act');
    expect(sent?.params).toMatchObject({ action: { action: 'click', reference: 'e2' }, target: { role: 'button', name: 'Save draft', frame_origin: ORIGIN } });
  });

  it('an act on a reference no observation showed is refused before policy, and nothing is sent', async () => {
    const host = draftsHost();
    const { act } = await observedRun(host);
    await expect(act({ action: 'click', reference: 'e99' })).rejects.toMatchObject({ code: 'invalid_arguments' });
    expect(host.calls.some((entry) => entry.method === 'page.act')).toBe(false);
  });
});

describe('frames', () => {
  it('an act inside a frame of another origin is denied by hardline.frame_origin', async () => {
    const { act } = await observedRun(draftsHost(), [ORIGIN]);
    await expect(act({ action: 'click', reference: 'f1e2' })).rejects.toMatchObject({ code: 'policy_denied', details: { rule: 'hardline.frame_origin' } });
  });

  it("a grant covers an act inside a run-origin frame by the frame's origin, not the page's", async () => {
    const grant = async (origin: string) =>
      (await call<GrantView>('POST', '/v1/grants', { token: parties.owner.token, body: { tool: 'browser.act', origin, ttl_ms: 600_000, max_uses: 5 } })).body;
    const onPage = await grant(ORIGIN);
    const { act } = await observedRun(draftsHost());
    const inFrame = await act({ action: 'click', reference: 'f1e2' });
    expect(inFrame.status).toBe(202);
    const onWidgets = await grant(WIDGETS);
    const covered = await (await observedRun(draftsHost())).act({ action: 'click', reference: 'f1e2' });
    expect(covered.status).toBe(200);
    expect(covered.call.phases).toMatchObject({ decision: { grant_id: onWidgets.id }, target: { frame_origin: WIDGETS, name: 'Pay now' } });
    expect(await env.DB.prepare('SELECT uses FROM grants WHERE id = ?').bind(onPage.id).first()).toEqual({ uses: 0 });
  });
});

describe('a grant use for an act the host guarantees it never sent is given back, in the same batch', () => {
  const grantFor = async (maxUses: number) =>
    (
      await call<GrantView>('POST', '/v1/grants', {
        token: parties.owner.token,
        body: { tool: 'browser.act', origin: ORIGIN, ttl_ms: 600_000, max_uses: maxUses },
      })
    ).body;
  const charged = async (grantId: string) => ({
    uses: (await env.DB.prepare('SELECT uses FROM grants WHERE id = ?').bind(grantId).first())?.uses,
    recorded: (await env.DB.prepare('SELECT count(*) AS n FROM grant_uses WHERE grant_id = ?').bind(grantId).first())?.n,
  });

  it.each([
    ['target_changed', new HostCallError('target_changed', 'e2 is now the button "Delete everything", not the button "Save draft"; nothing was dispatched')],
    ['lease_lost', new HostCallError('lease_lost', 'the lease ended before the act; nothing was dispatched')],
    ['host_unavailable', new HostUnreachable('the host could not be reached')],
  ])('%s: the call fails and the grant is charged nothing', async (code, error) => {
    const host = draftsHost(() => {
      throw error;
    });
    const granted = await grantFor(1);
    const { act } = await observedRun(host);
    const answered = await act({ action: 'click', reference: 'e2' });
    expect(answered.call).toMatchObject({ state: 'failed', errorCode: code });
    expect(await charged(granted.id)).toEqual({ uses: 0, recorded: 0 });
    // The use given back covers the next act.
    const again = await (await observedRun(draftsHost())).act({ action: 'click', reference: 'e2' });
    expect(again.call.phases).toMatchObject({ decision: { grant_id: granted.id } });
    expect(await charged(granted.id)).toEqual({ uses: 1, recorded: 1 });
  });

  it('an act whose outcome is unknown (no answer after sending) stays charged', async () => {
    const host = draftsHost(() => {
      throw new HostNoAnswer('connection_lost', 'the connection closed before the answer');
    });
    const granted = await grantFor(2);
    const { act } = await observedRun(host);
    const answered = await act({ action: 'click', reference: 'e2' });
    expect(answered.call).toMatchObject({ state: 'uncertain', errorCode: 'outcome_unknown' });
    expect(await charged(granted.id)).toEqual({ uses: 1, recorded: 1 });
  });
});

describe("the call's phases", () => {
  it('keep what the host blocked and the dialogs it answered, whatever version the agent reads', async () => {
    const at = '2026-12-01T00:00:00.000Z';
    const blocked = [{ origin: 'http://127.0.0.1:9', kind: 'navigation', reason: 'outside_run_origins', at }];
    const dialogs = [{ type: 'confirm', message: 'Delete this?', answer: 'dismissed', at }];
    const host = draftsHost(() => ({ ...draftsPage(2), blocked, dialogs }));
    const granted = await call<GrantView>('POST', '/v1/grants', {
      token: parties.owner.token,
      body: { tool: 'browser.act', origin: ORIGIN, ttl_ms: 600_000, max_uses: 1 },
    });
    expect(granted.status).toBe(201);
    const { ports, runId } = await observedRun(host);
    const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
    const answered = await proposeToolCall(ports, agent, await loadRun(ports, agent, runId), {
      tool: 'browser.act',
      version: '1.2.0',
      arguments: { action: 'click', revision: 1, reference: 'e2' },
    });
    expect(answered.call.phases).toMatchObject({ blocked, dialogs });
  });
});

describe('result versions', () => {
  it('a 1.3.0 result keeps blocked, dialogs and frames; 1.2.0 and 1.1.0 results never carry them', () => {
    const observation = {
      ...draftsPage(3),
      settle: { outcome: 'dom_quiet' as const, elapsed_ms: 5, pending_at_entry: 0, overflow: false },
      blocked: [{ origin: 'http://127.0.0.1:9', kind: 'navigation' as const, reason: 'outside_run_origins' as const, at: '2026-12-01T00:00:00.000Z' }],
      dialogs: [{ type: 'confirm' as const, message: 'Delete this?', answer: 'dismissed' as const, at: '2026-12-01T00:00:00.000Z' }],
    };
    expect(resultForVersion('1.3.0', observation, 1_000_000)).toMatchObject({
      blocked: observation.blocked,
      dialogs: observation.dialogs,
      frames: observation.frames,
    });
    const v12 = resultForVersion('1.2.0', observation, 1_000_000);
    expect(ObservationV1_2.safeParse(v12).success).toBe(true);
    for (const field of ['blocked', 'dialogs', 'frames']) expect(v12).not.toHaveProperty(field);
    const v11 = resultForVersion('1.1.0', observation, 1_000_000);
    expect(ObservationV1_1.safeParse(v11).success).toBe(true);
    for (const field of ['blocked', 'dialogs', 'frames', 'settle']) expect(v11).not.toHaveProperty(field);
  });
});
