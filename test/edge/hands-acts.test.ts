import { env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import { decideApproval } from '../../edge/pipeline/approvals.ts';
import { proposeToolCall } from '../../edge/pipeline/propose.ts';
import type { Ports } from '../../edge/ports.ts';
import { loadRun } from '../../edge/runs/lifecycle.ts';
import type { ApprovalView, GrantView, RunView } from '../../shared/api.ts';
import { call, partiesForEachTest, workerdPorts } from './support/edge-client.ts';
import { scriptedHost } from './support/fake-host.ts';
import { runFixture } from './support/run-fixture.ts';

// Issue 33, the edge's part of hover, drag and fill_form: every element an act touches is bound to
// what the observation of its revision showed, the owner is asked once in words that name them
// all, the host is sent every element to check before any input, and origin rules, operator
// denies and grants decide on every frame the act touches. Hover runs unasked under the default
// profile's bounded hover rule.

const ORIGIN = 'http://127.0.0.1:8133';
const WIDGETS = 'http://127.0.0.1:8134';
const PAGE = `${ORIGIN}/signup`;

const parties = partiesForEachTest();
const { publish, useProfile } = runFixture(parties);

/** What the stand-in host shows: a sign-up form, a board of cards, a menu, a card field in a frame of WIDGETS, a button behind a dialog. */
function signupPage(revision: number) {
  return {
    revision,
    url: PAGE,
    title: 'Sign up',
    settle: { outcome: 'dom_quiet', elapsed_ms: 0, pending_at_entry: 0, overflow: false },
    window: { scope: { start_node: 0, end_node: 14, total_nodes: 14 }, truncated: false },
    snapshot: [
      '- main [ref=e1]:',
      '  - textbox "First name" [ref=e2]',
      '  - textbox "Last name" [ref=e3]',
      '  - combobox "Country" [ref=e4]',
      '  - checkbox "Terms" [ref=e5]',
      '  - radio "Express" [ref=e6]',
      '  - button "Send" [ref=e7]',
      '  - list "Board" [ref=e8]:',
      '    - listitem "Card A" [ref=e9]',
      '    - listitem "Card B" [ref=e10]',
      '  - iframe [ref=e11]:',
      '    - textbox "Card number" [ref=f1e2]',
      '  - button "Menu" [ref=e12]',
      '  - button "Behind the dialog" [inert] [ref=e13]',
    ].join('\n'),
    frames: [{ reference: 'e11', prefix: 'f1', origin: WIDGETS, withheld: false }],
  };
}

/** The continuation of the sign-up page's window: more of the board. */
function laterCards(revision: number) {
  return {
    ...signupPage(revision),
    window: { scope: { start_node: 14, end_node: 16, total_nodes: 16 }, truncated: false },
    snapshot: ['- list "Done" [ref=e20]:', '  - listitem "Card C" [ref=e21]'].join('\n'),
    frames: [],
  };
}

/** A host that serves the sign-up page and answers every act with its next revision. */
function signupHost() {
  return scriptedHost(async (method, params) => {
    switch (method) {
      case 'lease.acquire':
      case 'lease.renew':
        return { lease_id: 'lease_handsacts01', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
      case 'page.observe':
        return params.continuation === undefined ? signupPage(1) : laterCards(1);
      case 'page.act':
        return signupPage(2);
      default:
        return { released: true };
    }
  });
}

let previousRun: string | undefined;
beforeEach(() => {
  previousRun = undefined;
});

/** A run on the sign-up page (revision 1 observed), bound to policy profile `profile` when given; `act` proposes a 1.5.0 act on revision 1. */
async function observedRun(host: ReturnType<typeof signupHost>, options: { origins?: string[]; profile?: string } = {}) {
  if (previousRun !== undefined) await call('POST', `/v1/runs/${previousRun}/cancel`, { token: parties.owner.token });
  const ports: Ports = workerdPorts(host.connector);
  const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
  const created = await call<RunView>('POST', '/v1/runs', {
    token: parties.owner.token,
    body: { profile_id: 'signup', intent: 'sign me up', origins: options.origins ?? [ORIGIN, WIDGETS] },
  });
  expect(created.status).toBe(201);
  previousRun = created.body.id;
  if (options.profile !== undefined) await useProfile(created.body.id, options.profile);
  const runOf = () => loadRun(ports, agent, created.body.id);
  await proposeToolCall(ports, agent, await runOf(), { tool: 'browser.observe', version: '1.5.0', arguments: {} });
  const act = async (args: Record<string, unknown>) =>
    proposeToolCall(ports, agent, await runOf(), { tool: 'browser.act', version: '1.5.0', arguments: { revision: 1, ...args } });
  return { ports, runId: created.body.id, act };
}

async function approvalOf(callId: string): Promise<ApprovalView | undefined> {
  const approvals = (await call<{ approvals: ApprovalView[] }>('GET', '/v1/approvals', { token: parties.owner.token })).body.approvals;
  return approvals.find((candidate) => candidate.tool_call_id === callId);
}

const owner = () => ({ id: parties.owner.id, kind: 'owner' as const, ownerId: parties.owner.id });

const SIX_FIELDS = [
  { reference: 'e2', value: 'Ada' },
  { reference: 'e3', value: 'Lovelace' },
  { reference: 'e4', value: 'GB' },
  { reference: 'e5', value: true },
  { reference: 'e6', value: true },
  { reference: 'f1e2', value: '4242 4242 4242 4242' },
];

describe('fill_form', () => {
  it('asks the owner once, listing every field in words, and sends every field to the host to check before any input', async () => {
    const host = signupHost();
    const { ports, runId, act } = await observedRun(host);
    const parked = await act({ action: 'fill_form', fields: SIX_FIELDS, submit_reference: 'e7' });
    expect(parked.status).toBe(202);
    const approval = await approvalOf(parked.call.id);
    expect(approval?.summary).toBe(
      `Fill in a form on "Sign up" (${PAGE}): Type "Ada" into the textbox "First name"; Type "Lovelace" into the textbox "Last name"; ` +
        'Select "GB" in the combobox "Country"; Check the checkbox "Terms"; Check the radio "Express"; ' +
        `Type "4242 4242 4242 4242" into the textbox "Card number" inside a frame of ${WIDGETS}; Click the button "Send"`,
    );
    expect(approval?.target).toMatchObject({
      reference: 'e2',
      role: 'textbox',
      name: 'First name',
      frame_origin: ORIGIN,
      fields: [
        { reference: 'e2', role: 'textbox', name: 'First name', frame_origin: ORIGIN, value: 'Ada' },
        { reference: 'e3', value: 'Lovelace' },
        { reference: 'e4', role: 'combobox', value: 'GB' },
        { reference: 'e5', role: 'checkbox', value: true },
        { reference: 'e6', role: 'radio', value: true },
        { reference: 'f1e2', name: 'Card number', frame_origin: WIDGETS, value: '4242 4242 4242 4242' },
      ],
      submit: { reference: 'e7', role: 'button', name: 'Send', frame_origin: ORIGIN },
    });
    // One approval for the whole form.
    const pending = await env.DB.prepare("SELECT count(*) AS n FROM approvals WHERE run_id = ? AND state = 'pending'").bind(runId).first();
    expect(pending).toEqual({ n: 1 });

    await decideApproval(ports, owner(), parked.approvalId!, 'approve');
    const sent = host.calls.filter((entry) => entry.method === 'page.act');
    expect(sent).toHaveLength(1);
    expect(sent[0]?.params).toMatchObject({
      action: { action: 'fill_form', reference: 'e2', submit_reference: 'e7' },
      target: { role: 'textbox', name: 'First name', frame_origin: ORIGIN },
      elements: [
        { reference: 'e2', role: 'textbox', name: 'First name', frame_origin: ORIGIN },
        { reference: 'e3', role: 'textbox', name: 'Last name', frame_origin: ORIGIN },
        { reference: 'e4', role: 'combobox', name: 'Country', frame_origin: ORIGIN },
        { reference: 'e5', role: 'checkbox', name: 'Terms', frame_origin: ORIGIN },
        { reference: 'e6', role: 'radio', name: 'Express', frame_origin: ORIGIN },
        { reference: 'f1e2', role: 'textbox', name: 'Card number', frame_origin: WIDGETS },
        { reference: 'e7', role: 'button', name: 'Send', frame_origin: ORIGIN },
      ],
    });
  });

  it('a submit key is part of the approval and the bound target', async () => {
    const { act } = await observedRun(signupHost());
    const parked = await act({ action: 'fill_form', fields: [{ reference: 'e2', value: 'Ada' }], submit_key: 'Enter' });
    expect((await approvalOf(parked.call.id))?.summary).toBe(`Fill in a form on "Sign up" (${PAGE}): Type "Ada" into the textbox "First name"; Press Enter`);
    expect(parked.call.phases).toMatchObject({ target: { key: 'Enter', fields: [{ reference: 'e2', value: 'Ada' }] } });
  });

  it.each([
    [
      'a field',
      [
        { reference: 'e2', value: 'Ada' },
        { reference: 'e99', value: 'x' },
      ],
      undefined,
      /reference e99 is in no observation of revision 1/,
    ],
    ['the submit button', [{ reference: 'e2', value: 'Ada' }], 'e98', /reference e98 is in no observation of revision 1/],
  ])('naming %s no observation showed is invalid_arguments, stored as rejected, and nothing is sent', async (_what, fields, submit, message) => {
    const host = signupHost();
    const { runId, act } = await observedRun(host);
    await expect(act({ action: 'fill_form', fields, ...(submit ? { submit_reference: submit } : {}) })).rejects.toMatchObject({
      code: 'invalid_arguments',
      message: expect.stringMatching(message),
    });
    expect(host.calls.some((entry) => entry.method === 'page.act')).toBe(false);
    const rejected = await env.DB.prepare("SELECT error_code FROM tool_calls WHERE run_id = ? AND state = 'rejected'").bind(runId).first();
    expect(rejected).toEqual({ error_code: 'invalid_arguments' });
  });

  it.each([
    ['true into a textbox', { reference: 'e2', value: true }, /field e2 \(the textbox "First name"\) cannot take true/],
    ['text into a checkbox', { reference: 'e5', value: 'yes' }, /field e5 \(the checkbox "Terms"\) cannot take the text "yes"/],
    ['false into a radio button', { reference: 'e6', value: false }, /field e6 \(the radio "Express"\) cannot be given false/],
    ['text into a button', { reference: 'e7', value: 'Send' }, /field e7 \(the button "Send"\) cannot take the text/],
  ])('%s is invalid_arguments before any decision', async (_what, field, message) => {
    const host = signupHost();
    const { runId, act } = await observedRun(host);
    await expect(act({ action: 'fill_form', fields: [{ reference: 'e3', value: 'Lovelace' }, field] })).rejects.toMatchObject({
      code: 'invalid_arguments',
      message: expect.stringMatching(message),
    });
    expect(await env.DB.prepare('SELECT count(*) AS n FROM approvals WHERE run_id = ?').bind(runId).first()).toEqual({ n: 0 });
    expect(host.calls.some((entry) => entry.method === 'page.act')).toBe(false);
  });

  it('a field listed twice is invalid_arguments', async () => {
    const { act } = await observedRun(signupHost());
    await expect(
      act({
        action: 'fill_form',
        fields: [
          { reference: 'e2', value: 'Ada' },
          { reference: 'e2', value: 'Grace' },
        ],
      }),
    ).rejects.toMatchObject({ code: 'invalid_arguments', message: expect.stringMatching(/field e2 is listed more than once/) });
  });

  it('an inert field is not_actionable, and names it', async () => {
    const { act } = await observedRun(signupHost());
    await expect(act({ action: 'fill_form', fields: [{ reference: 'e2', value: 'Ada' }], submit_reference: 'e13' })).rejects.toMatchObject({
      code: 'not_actionable',
      message: expect.stringMatching(/^e13 \(the button "Behind the dialog"\) is inert/),
    });
  });

  it('an operator deny of the origin of a field inside a frame denies the whole fill', async () => {
    await publish('no-card-frames', {
      rules: [{ id: 'act.approval', tool: 'browser.act', effect: 'approval' }],
      denies: [{ id: 'deny.widgets', tool: 'browser.act', origins: [WIDGETS], reason: 'no input into the payment widget' }],
    });
    const host = signupHost();
    const { act } = await observedRun(host, { profile: 'no-card-frames' });
    await expect(act({ action: 'fill_form', fields: SIX_FIELDS })).rejects.toMatchObject({ code: 'policy_denied', details: { rule: 'deny.widgets' } });
    // The same form without the framed field only asks.
    expect((await (await observedRun(signupHost(), { profile: 'no-card-frames' })).act({ action: 'fill_form', fields: SIX_FIELDS.slice(0, 5) })).status).toBe(
      202,
    );
    expect(host.calls.some((entry) => entry.method === 'page.act')).toBe(false);
  });

  it('a field inside a frame outside the run origins denies the whole fill by hardline.frame_origin', async () => {
    const { act } = await observedRun(signupHost(), { origins: [ORIGIN] });
    await expect(act({ action: 'fill_form', fields: SIX_FIELDS })).rejects.toMatchObject({
      code: 'policy_denied',
      details: { rule: 'hardline.frame_origin' },
      message: expect.stringMatching(`an element the act touches is inside a frame of ${WIDGETS}`),
    });
  });

  it('a grant covers a fill only when every field is of its origin', async () => {
    const granted = await call<GrantView>('POST', '/v1/grants', {
      token: parties.owner.token,
      body: { tool: 'browser.act', actions: ['fill_form'], origin: ORIGIN, ttl_ms: 600_000, max_uses: 5 },
    });
    expect(granted.status).toBe(201);
    const mixed = await (await observedRun(signupHost())).act({ action: 'fill_form', fields: SIX_FIELDS });
    expect(mixed.status).toBe(202);
    const sameOrigin = await (await observedRun(signupHost())).act({ action: 'fill_form', fields: SIX_FIELDS.slice(0, 5), submit_reference: 'e7' });
    expect(sameOrigin.status).toBe(200);
    expect(sameOrigin.call.phases).toMatchObject({ decision: { grant_id: granted.body.id } });
  });
});

describe('drag', () => {
  it('the approval names both elements, and the host is sent the destination to check', async () => {
    const host = signupHost();
    const { ports, act } = await observedRun(host);
    const parked = await act({ action: 'drag', reference: 'e9', to_reference: 'e10' });
    expect(parked.status).toBe(202);
    const approval = await approvalOf(parked.call.id);
    expect(approval?.summary).toBe(`Drag the listitem "Card A" onto the listitem "Card B" on "Sign up" (${PAGE})`);
    expect(approval?.target).toMatchObject({
      reference: 'e9',
      name: 'Card A',
      destination: { reference: 'e10', role: 'listitem', name: 'Card B', frame_origin: ORIGIN },
    });
    await decideApproval(ports, owner(), parked.approvalId!, 'approve');
    const sent = host.calls.find((entry) => entry.method === 'page.act');
    expect(sent?.params).toMatchObject({
      action: { action: 'drag', reference: 'e9', to_reference: 'e10' },
      target: { role: 'listitem', name: 'Card A', frame_origin: ORIGIN },
      elements: [{ reference: 'e10', role: 'listitem', name: 'Card B', frame_origin: ORIGIN }],
    });
  });

  it('between frames of the run origins it asks; onto a frame outside them it is denied', async () => {
    const within = await (await observedRun(signupHost())).act({ action: 'drag', reference: 'e9', to_reference: 'f1e2' });
    expect((await approvalOf(within.call.id))?.summary).toBe(
      `Drag the listitem "Card A" onto the textbox "Card number" inside a frame of ${WIDGETS} on "Sign up" (${PAGE})`,
    );
    const { act } = await observedRun(signupHost(), { origins: [ORIGIN] });
    await expect(act({ action: 'drag', reference: 'e9', to_reference: 'f1e2' })).rejects.toMatchObject({
      code: 'policy_denied',
      details: { rule: 'hardline.frame_origin' },
    });
  });

  it('a destination shown only in a continuation window of the revision is bound from it', async () => {
    const host = signupHost();
    const { ports, runId, act } = await observedRun(host);
    const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
    await proposeToolCall(ports, agent, await loadRun(ports, agent, runId), { tool: 'browser.observe', version: '1.5.0', arguments: { continuation: 'next' } });
    const parked = await act({ action: 'drag', reference: 'e9', to_reference: 'e21' });
    expect(parked.call.phases).toMatchObject({ target: { name: 'Card A', destination: { reference: 'e21', role: 'listitem', name: 'Card C' } } });
  });

  it('a destination no observation showed is invalid_arguments naming it', async () => {
    const { act } = await observedRun(signupHost());
    await expect(act({ action: 'drag', reference: 'e9', to_reference: 'e77' })).rejects.toMatchObject({
      code: 'invalid_arguments',
      message: expect.stringMatching(/^reference e77 is in no observation of revision 1/),
    });
  });
});

describe('hover', () => {
  it('runs unasked under the default profile, although its reference is page-derived', async () => {
    const host = signupHost();
    const { act } = await observedRun(host);
    const hovered = await act({ action: 'hover', reference: 'e12' });
    expect(hovered.status).toBe(200);
    expect(hovered.call).toMatchObject({ state: 'succeeded' });
    expect(hovered.call.phases).toMatchObject({ decision: { effect: 'allow', rule: 'act.bounded_hover' }, target: { role: 'button', name: 'Menu' } });
    expect((hovered.call.phases as { decision: { overlay?: string } }).decision.overlay).toBeUndefined();
    expect(host.calls.filter((entry) => entry.method === 'page.act')).toHaveLength(1);
  });

  it('asks under a published profile without the rule', async () => {
    await publish('no-hover', { rules: [{ id: 'act.approval', tool: 'browser.act', effect: 'approval' }], denies: [] });
    const host = signupHost();
    const { act } = await observedRun(host, { profile: 'no-hover' });
    const parked = await act({ action: 'hover', reference: 'e12' });
    expect([parked.status, (parked.call.phases as { decision: { rule: string } }).decision.rule]).toEqual([202, 'act.approval']);
    expect((await approvalOf(parked.call.id))?.summary).toBe(`Hover over the button "Menu" on "Sign up" (${PAGE})`);
    expect(host.calls.some((entry) => entry.method === 'page.act')).toBe(false);
  });

  it('an operator deny of hovers beats the hover rule', async () => {
    await publish('deny-hover', {
      rules: [{ id: 'act.bounded_hover', tool: 'browser.act', effect: 'allow', condition: 'bounded_browser_hover' }],
      denies: [{ id: 'deny.hover', tool: 'browser.act', actions: ['hover'], reason: 'no hovering' }],
    });
    const { act } = await observedRun(signupHost(), { profile: 'deny-hover' });
    await expect(act({ action: 'hover', reference: 'e12' })).rejects.toMatchObject({ code: 'policy_denied', details: { rule: 'deny.hover' } });
  });

  it('a hover inside a frame outside the run origins is denied first', async () => {
    const { act } = await observedRun(signupHost(), { origins: [ORIGIN] });
    await expect(act({ action: 'hover', reference: 'f1e2' })).rejects.toMatchObject({ code: 'policy_denied', details: { rule: 'hardline.frame_origin' } });
  });
});

describe("the owner's console", () => {
  it('shows one parked fill_form with every field, and a parked drag with both elements', async () => {
    const host = signupHost();
    const fill = await (await observedRun(host)).act({ action: 'fill_form', fields: SIX_FIELDS, submit_reference: 'e7' });
    expect(fill.status).toBe(202);
    const app = createApp(() => workerdPorts(host.connector));
    const edge = 'http://127.0.0.1:8787';
    const signIn = await app.request(`${edge}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: edge },
      body: new URLSearchParams({ token: parties.owner.token }).toString(),
    });
    expect(signIn.status).toBe(303);
    const cookie = (signIn.headers.get('Set-Cookie') ?? '').split(';')[0]!;
    const inboxPage = async () => (await app.request(`${edge}/console`, { headers: { Cookie: cookie } })).text();
    const inbox = await inboxPage();
    expect(inbox).toContain(
      'Fill in a form on &quot;Sign up&quot; (http://127.0.0.1:8133/signup): Type &quot;Ada&quot; into the textbox &quot;First name&quot;; ' +
        'Type &quot;Lovelace&quot; into the textbox &quot;Last name&quot;; Select &quot;GB&quot; in the combobox &quot;Country&quot;; ' +
        'Check the checkbox &quot;Terms&quot;; Check the radio &quot;Express&quot;; ' +
        `Type &quot;4242 4242 4242 4242&quot; into the textbox &quot;Card number&quot; inside a frame of ${WIDGETS}; Click the button &quot;Send&quot;`,
    );
    expect(inbox).toContain(`<li>the textbox &quot;Card number&quot; inside a frame of ${WIDGETS}: 4242 4242 4242 4242</li>`);
    expect(inbox).toContain('<li>the checkbox &quot;Terms&quot;: checked</li>');
    expect(inbox).toContain('<dt>Then click</dt><dd>the button &quot;Send&quot;</dd>');
    // The next run (on the same browser profile) cancels this one.
    const drag = await (await observedRun(host)).act({ action: 'drag', reference: 'e9', to_reference: 'e10' });
    expect(drag.status).toBe(202);
    const withDrag = await inboxPage();
    expect(withDrag).toContain('Drag the listitem &quot;Card A&quot; onto the listitem &quot;Card B&quot;');
    expect(withDrag).toContain('<dt>Onto</dt><dd>the listitem &quot;Card B&quot;</dd>');
  });
});
