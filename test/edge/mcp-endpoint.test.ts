import { SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { call, counts, errorBody, partiesForEachTest, row } from './support/edge-client.ts';
import { runFixture } from './support/run-fixture.ts';

// The MCP endpoint inside workerd against D1: whatever a client sends, the answer is a
// typed refusal (HTTP 4xx or a JSON-RPC / tool error), never a 5xx, and nothing changes.

const parties = partiesForEachTest();
const fixture = runFixture(parties);
const nested = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;
const MCP = 'http://127.0.0.1:8787/mcp';

function post(body: string, headers: Record<string, string> = {}) {
  return SELF.fetch(MCP, {
    method: 'POST',
    headers: { authorization: `Bearer ${parties.agent.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  });
}

const rpc = (method: string, params: unknown, id = 1) => JSON.stringify({ jsonrpc: '2.0', id, method, params });

describe('the MCP endpoint refuses bad input with typed answers', () => {
  it('malformed JSON, a message that is no JSON-RPC, an oversized body and a foreign Host are 4xx, and change nothing', async () => {
    const before = await counts();
    const malformed = await post('{"jsonrpc": "2.0", "id": 1, "method": ');
    expect({ status: malformed.status, body: await malformed.json() }).toEqual({
      status: 400,
      body: errorBody('malformed_json', 'the body is not JSON (a JSON-RPC message or batch)'),
    });
    const notRpc = await post('{"hello": "world"}');
    expect(notRpc.status).toBeGreaterThanOrEqual(400);
    expect(notRpc.status).toBeLessThan(500);
    const huge = await post(rpc('tools/list', { padding: 'x'.repeat(300 * 1024) }));
    expect({ status: huge.status, body: await huge.json() }).toEqual({
      status: 413,
      body: errorBody('payload_too_large', 'request bodies are limited to 262144 bytes'),
    });
    const foreign = await SELF.fetch('http://attacker.example/mcp', {
      method: 'POST',
      headers: { authorization: `Bearer ${parties.agent.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: rpc('tools/list', {}),
    });
    expect({ status: foreign.status, body: await foreign.json() }).toEqual({
      status: 403,
      body: errorBody('forbidden', 'the MCP endpoint does not answer for host attacker.example'),
    });
    expect(await counts()).toEqual(before);
  });

  it('an unknown tool is a JSON-RPC error; arguments of the wrong shape are a tool error with invalid_arguments; no call is recorded', async () => {
    const before = await counts();
    const unknown = (await (await post(rpc('tools/call', { name: 'browser_teleport', arguments: {} }))).json()) as {
      error?: { code: number; message: string };
    };
    expect(unknown.error?.message).toContain('browser_teleport');
    for (const [name, args] of [
      ['browser_act', { run_id: 'run_x', action: 'click', revision: 'one', reference: 42 }],
      ['browser_navigate', { url: 'http://127.0.0.1/' }],
      ['call_status', { call_id: 7 }],
      ['run_report', { run_id: 'run_x', status: 'done', summary: '' }],
      ['run_claim', { run_id: ['a'] }],
    ] as const) {
      const answer = (await (await post(rpc('tools/call', { name, arguments: args }))).json()) as {
        result?: { isError?: boolean; content: { text: string }[] };
      };
      expect(answer.result?.isError, name).toBe(true);
      expect(answer.result?.content[0]?.text, name).toMatch(/^(invalid_arguments|not_found): /);
    }
    expect(await counts()).toEqual(before);
  });

  it("initialize remembers whether the agent's client shows URL-mode elicitations, and answers the protocol version the client asked for", async () => {
    const answer = await post(
      rpc('initialize', { protocolVersion: '2025-11-25', capabilities: { elicitation: { url: {} } }, clientInfo: { name: 'edge-test', version: '1' } }),
    );
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { result: { protocolVersion: string; serverInfo: { name: string } } };
    expect(body.result).toMatchObject({ protocolVersion: '2025-11-25', serverInfo: { name: 'governed-browser' } });
    expect(await row('SELECT url_elicitation, client_name FROM mcp_clients WHERE principal_id = ?', parties.agent.id)).toEqual({
      url_elicitation: 1,
      client_name: 'edge-test',
    });
    await post(rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'edge-test', version: '2' } }));
    expect((await row('SELECT url_elicitation FROM mcp_clients WHERE principal_id = ?', parties.agent.id))?.url_elicitation).toBe(0);
  });

  // Arguments nested thousands deep, sent over MCP as over the HTTP API.
  it('deeply nested browser-tool arguments are refused invalid_arguments, as on the HTTP API, and nothing is stored', async () => {
    const run = await fixture.ownerRun();
    const http = await call('POST', `/v1/runs/${run}/tool-calls`, {
      token: parties.agent.token,
      raw: `{"tool":"browser.navigate","version":"1.2.0","arguments":{"url":${nested(5000)}}}`,
    });
    expect(http).toEqual({ status: 400, body: errorBody('invalid_arguments', '✖ nested at most 16 levels deep\n  → at arguments') });
    const calls = await row('SELECT count(*) AS n FROM tool_calls WHERE run_id = ?', run);
    for (const depth of [5000, 1000]) {
      const answer = (await (
        await post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"browser_navigate","arguments":{"run_id":"${run}","url":${nested(depth)}}}}`)
      ).json()) as { result?: { isError?: boolean; content: { text: string }[] }; error?: unknown };
      expect(answer.error, String(depth)).toBeUndefined();
      expect(answer.result?.content[0]?.text, String(depth)).toMatch(/^invalid_arguments: /);
    }
    expect(await row('SELECT count(*) AS n FROM tool_calls WHERE run_id = ?', run)).toEqual(calls);
  });

  it('an initialize the transport refuses (406 for the wrong Accept, or inside a batch) changes nothing the edge remembers of the client', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: { elicitation: { url: {} } }, clientInfo: { name: 'refused', version: '1' } },
    };
    expect((await post(JSON.stringify(initialize), { accept: 'application/json' })).status).toBe(406);
    await post(JSON.stringify([initialize]));
    expect(await row('SELECT url_elicitation FROM mcp_clients WHERE principal_id = ?', parties.agent.id)).toBeNull();
  });
});
