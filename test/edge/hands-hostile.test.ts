import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import { HostCallError } from '../../edge/host/host-session.ts';
import type { RunView, ToolCallView } from '../../shared/api.ts';
import type { ErrorBody } from '../../shared/errors.ts';
import type { RunFileView } from '../../shared/run-files.ts';
import { partiesForEachTest, workerdPorts } from './support/edge-client.ts';
import { scriptedHost } from './support/fake-host.ts';

// Hostile arguments to the 1.5.0 acts, navigations and observations (issue 33), over the HTTP
// API on the Workers app and the real D1, with a stand-in host that answers as the real one does
// (it refuses a screenshot with a continuation, and a point outside its picture): every one is a
// typed 4xx, and nothing that could touch the page is sent.

const ORIGIN = 'http://127.0.0.1:8141';
const EDGE = 'http://127.0.0.1:8787';
const PICTURE = { width: 800, height: 600 };
const ADS = 'https://ads.example';

const parties = partiesForEachTest();

function formPage(revision: number) {
  return {
    revision,
    url: `${ORIGIN}/form`,
    title: 'Form',
    settle: { outcome: 'dom_quiet', elapsed_ms: 0, pending_at_entry: 0, overflow: false },
    window: { scope: { start_node: 0, end_node: 7, total_nodes: 7 }, truncated: false },
    snapshot: [
      '- main [ref=e1]:',
      '  - textbox "Name" [ref=e2]',
      '  - checkbox "Terms" [ref=e3]',
      '  - button "Send" [ref=e4]',
      '  - button "Choose file" [ref=e5]',
      '  - listitem "Card" [ref=e6]',
      '  - iframe [ref=e7]',
    ].join('\n'),
    frames: [{ reference: 'e7', origin: ADS, withheld: true }],
  };
}

function hostileApp() {
  let revision = 0;
  const host = scriptedHost(async (method, params) => {
    switch (method) {
      case 'lease.acquire':
      case 'lease.renew':
        return { lease_id: 'lease_hostile0001', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
      case 'page.observe':
        // The real host (browser-host/methods.ts) refuses a screenshot with a continuation.
        if (params.continuation !== undefined && params.screenshot === true) {
          throw new HostCallError('invalid_params', 'a screenshot comes with a fresh observation only, not with a continuation');
        }
        if (params.continuation !== undefined) throw new HostCallError('invalid_params', 'continuation: not a cursor this host issued');
        return formPage(revision === 0 ? ++revision : revision);
      case 'page.navigate':
        return formPage(++revision);
      case 'page.hit_test': {
        const { x, y } = params.point as { x: number; y: number };
        if (x >= PICTURE.width || y >= PICTURE.height) throw new HostCallError('invalid_params', `point: (${x}, ${y}) is outside the picture`);
        return { reference: 'e6' };
      }
      case 'page.history':
        return { url: null };
      case 'page.act':
        return formPage(++revision);
      default:
        return { released: true };
    }
  });
  const app = createApp(() => workerdPorts(host.connector));
  async function request<Body>(method: string, path: string, token: string, json?: unknown) {
    const response = await app.request(`${EDGE}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(json !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
    });
    return { status: response.status, body: (await response.json()) as Body };
  }
  async function observedRun(): Promise<string> {
    const created = await request<RunView>('POST', '/v1/runs', parties.owner.token, { profile_id: 'hostile', intent: 'fill the form', origins: [ORIGIN] });
    expect(created.status).toBe(201);
    expect((await propose(created.body.id, 'browser.navigate', { url: `${ORIGIN}/form` })).status).toBe(200);
    return created.body.id;
  }
  const propose = <Body = ToolCallView>(runId: string, tool: string, args: unknown) =>
    request<Body>('POST', `/v1/runs/${runId}/tool-calls`, parties.agent.token, { tool, version: '1.5.0', arguments: args });
  return { request, observedRun, propose, calls: host.calls, revision: () => revision };
}

async function statesOf(runId: string, tool: string) {
  const { results } = await env.DB.prepare('SELECT state, error_code FROM tool_calls WHERE run_id = ? AND tool = ? ORDER BY created_at')
    .bind(runId, tool)
    .all<{ state: string; error_code: string | null }>();
  return results;
}

describe('hostile 1.5.0 arguments', () => {
  it('to browser.act are invalid_arguments (400) and send the page nothing', async () => {
    const hostile = hostileApp();
    const runId = await hostile.observedRun();
    const revision = hostile.revision();
    const fields = (count: number) => Array.from({ length: count }, (_, index) => ({ reference: `e${index + 100}`, value: 'x' }));
    const proposals: Record<string, unknown>[] = [
      { action: 'fill_form', fields: fields(33) },
      { action: 'fill_form', fields: fields(32) },
      { action: 'fill_form', fields: [] },
      {
        action: 'fill_form',
        fields: [
          { reference: 'e2', value: 'a' },
          { reference: 'e2', value: 'b' },
        ],
      },
      { action: 'fill_form', fields: [{ reference: 'e2', value: 'a' }], submit_reference: 'e4', submit_key: 'Enter' },
      { action: 'fill_form', fields: [{ reference: 'e2', value: 'a' }], reference: 'e2' },
      { action: 'fill_form', fields: [{ reference: 'e3', value: 'text into a checkbox' }] },
      { action: 'fill_form', fields: [{ reference: 'e2', value: null }] },
      { action: 'click', point: { x: -1, y: 10 } },
      { action: 'click', point: { x: 1e9, y: 10 } },
      { action: 'click', point: { x: 'NaN', y: 10 } },
      { action: 'click', point: { x: null, y: 10 } },
      { action: 'click', point: { x: 10 } },
      { action: 'click', point: { x: 10, y: 10, z: 1 } },
      { action: 'click', point: { x: PICTURE.width, y: 10 } },
      { action: 'click', point: { x: 10, y: 10 }, reference: 'e4' },
      { action: 'click' },
      { action: 'drag', reference: 'e6', to_reference: 'e6', to_point: { x: 1, y: 1 } },
      { action: 'drag', reference: 'e6' },
      { action: 'hover', reference: 'e6', extra: true },
      { action: 'upload', reference: 'e5', file_id: '../../etc/passwd' },
      { action: 'upload', reference: 'e5', file_id: 'file_neverissued00000' },
      { action: 'upload', reference: 'e5' },
    ];
    const answers = [];
    for (const args of proposals) answers.push(await hostile.propose<ErrorBody>(runId, 'browser.act', { revision, ...args }));
    expect(answers.map((answer) => [answer.status, answer.body.error?.code])).toEqual(proposals.map(() => [400, 'invalid_arguments']));
    expect(hostile.calls.filter((sent) => sent.method === 'page.act')).toEqual([]);
  });

  it('a drag onto the element itself (by reference or by a point that lands there) is invalid_arguments: it would be a click', async () => {
    const hostile = hostileApp();
    const runId = await hostile.observedRun();
    const revision = hostile.revision();
    for (const args of [
      { action: 'drag', reference: 'e6', to_reference: 'e6' },
      { action: 'drag', reference: 'e6', to_point: { x: 10, y: 10 } },
      { action: 'drag', point: { x: 5, y: 5 }, to_point: { x: 10, y: 10 } },
    ]) {
      const refused = await hostile.propose<ErrorBody>(runId, 'browser.act', { revision, ...args });
      expect([refused.status, refused.body.error.code]).toEqual([400, 'invalid_arguments']);
      expect(refused.body.error.message).toContain('onto itself');
    }
    expect(hostile.calls.filter((sent) => sent.method === 'page.act')).toEqual([]);
  });

  it('an act on a foreign iframe by its reference is denied as an act inside that frame, as a point on it is', async () => {
    const hostile = hostileApp();
    const runId = await hostile.observedRun();
    const revision = hostile.revision();
    for (const args of [
      { action: 'hover', reference: 'e7' },
      { action: 'click', reference: 'e7' },
      { action: 'drag', reference: 'e6', to_reference: 'e7' },
      { action: 'fill_form', fields: [{ reference: 'e2', value: 'Ada' }], submit_reference: 'e7' },
    ]) {
      const denied = await hostile.propose<ErrorBody>(runId, 'browser.act', { revision, ...args });
      expect([denied.status, denied.body.error.code, denied.body.error.details]).toEqual([
        403,
        'policy_denied',
        expect.objectContaining({ rule: 'hardline.frame_origin' }),
      ]);
      expect(denied.body.error.message).toContain(ADS);
    }
    expect(hostile.calls.filter((sent) => sent.method === 'page.act')).toEqual([]);
  });

  it('to browser.navigate and browser.observe are invalid_arguments (400): extra fields, a screenshot with a continuation', async () => {
    const hostile = hostileApp();
    const runId = await hostile.observedRun();
    const navigations = [{ history: 'back', extra: 1 }, { history: 'back', url: `${ORIGIN}/` }, { history: 'sideways' }, { history: null }];
    for (const args of navigations) {
      const refused = await hostile.propose<ErrorBody>(runId, 'browser.navigate', args);
      expect([refused.status, refused.body.error.code]).toEqual([400, 'invalid_arguments']);
    }
    const observesBefore = hostile.calls.filter((sent) => sent.method === 'page.observe').length;
    const pictured = await hostile.propose<ErrorBody>(runId, 'browser.observe', { screenshot: true, continuation: 'cursor-of-an-earlier-window' });
    expect([pictured.status, pictured.body.error.code]).toEqual([400, 'invalid_arguments']);
    expect(pictured.body.error.message).toContain('screenshot');
    expect(hostile.calls.filter((sent) => sent.method === 'page.observe')).toHaveLength(observesBefore);
    expect((await statesOf(runId, 'browser.observe')).at(-1)).toEqual({ state: 'rejected', error_code: 'invalid_arguments' });
  });

  it('an upload naming a file the owner removed is invalid_arguments at proposal, sending nothing', async () => {
    const hostile = hostileApp();
    const runId = await hostile.observedRun();
    const attached = await hostile.request<RunFileView>('POST', `/v1/runs/${runId}/files`, parties.owner.token, {
      name: 'gone.txt',
      mime_type: 'text/plain',
      data_base64: btoa('gone'),
    });
    expect(attached.status).toBe(201);
    expect((await hostile.request('DELETE', `/v1/runs/${runId}/files/${attached.body.id}`, parties.owner.token)).status).toBe(200);
    const refused = await hostile.propose<ErrorBody>(runId, 'browser.act', {
      action: 'upload',
      revision: hostile.revision(),
      reference: 'e5',
      file_id: attached.body.id,
    });
    expect([refused.status, refused.body.error.code]).toEqual([400, 'invalid_arguments']);
    expect(hostile.calls.filter((sent) => sent.method === 'page.act')).toEqual([]);
  });
});
