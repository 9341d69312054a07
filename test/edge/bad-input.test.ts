import { beforeAll, describe, expect, it } from 'vitest';
import type { RunView, ToolCallView } from '../../shared/api.ts';
import { call, callError, counts, errorBody, type Parties, seedParties, setLatestRevision } from './support/edge-client.ts';

// Every endpoint answers malformed input, missing or wrong tokens, unknown fields, wrong types,
// unknown ids and wrong principals with a 4xx, a stable code and a message that says what was
// wrong (the whole error body is asserted), and changes nothing (rejected tool-call proposals are
// stored as rejections and nothing else). One case per test.

let parties: Parties;
let runId: string;
let approvalId: string;
let callId: string;

beforeAll(async () => {
  parties = await seedParties();
  const run = await call<RunView>('POST', '/v1/runs', {
    token: parties.owner.token,
    body: { profile_id: 'p1', intent: 'x', origins: ['http://127.0.0.1:8123'] },
  });
  runId = run.body.id;
  await setLatestRevision(runId, 1);
  const parked = await call<ToolCallView>('POST', `/v1/runs/${runId}/tool-calls`, {
    token: parties.agent.token,
    body: { tool: 'browser.act', version: '1.2.0', arguments: { action: 'click', revision: 1, reference: 'e1' } },
  });
  approvalId = parked.body.approval_id!;
  callId = parked.body.id;
});

type Case = [name: string, method: string, path: () => string, options: () => Parameters<typeof call>[2], status: number, code: string];

const agent = () => parties.agent.token;
const owner = () => parties.owner.token;
const act = (args: Record<string, unknown>) => ({ tool: 'browser.act', version: '1.2.0', arguments: args });

const cases: Case[] = [
  ['no token', 'POST', () => '/v1/runs', () => ({ body: { profile_id: 'p', intent: 'x', origins: ['http://a.test'] } }), 401, 'unauthenticated'],
  ['unknown token', 'GET', () => `/v1/runs/${runId}`, () => ({ token: 'x'.repeat(32) }), 401, 'unauthenticated'],
  ['malformed Authorization header', 'GET', () => `/v1/runs/${runId}`, () => ({ headers: { Authorization: 'Basic abc' } }), 401, 'unauthenticated'],
  ['malformed JSON', 'POST', () => '/v1/runs', () => ({ token: agent(), raw: '{"profile_id":' }), 400, 'malformed_json'],
  ['JSON that is not an object', 'POST', () => '/v1/runs', () => ({ token: agent(), raw: '[1,2]' }), 400, 'invalid_request'],
  [
    'body without JSON content type',
    'POST',
    () => '/v1/runs',
    () => ({ token: agent(), raw: '{}', headers: { 'Content-Type': 'text/plain' } }),
    415,
    'unsupported_media_type',
  ],
  [
    'unknown field on a run',
    'POST',
    () => '/v1/runs',
    () => ({ token: agent(), body: { profile_id: 'p', intent: 'x', origins: ['http://a.test'], admin: true } }),
    400,
    'invalid_request',
  ],
  [
    'deadline as a string',
    'POST',
    () => '/v1/runs',
    () => ({ token: agent(), body: { profile_id: 'p', intent: 'x', origins: ['http://a.test'], deadline_ms: '60000' } }),
    400,
    'invalid_request',
  ],
  [
    'origin with a path',
    'POST',
    () => '/v1/runs',
    () => ({ token: agent(), body: { profile_id: 'p', intent: 'x', origins: ['http://a.test/path'] } }),
    400,
    'invalid_request',
  ],
  [
    'origin with an impossible port',
    'POST',
    () => '/v1/runs',
    () => ({ token: agent(), body: { profile_id: 'p', intent: 'x', origins: ['http://a.b:99999'] } }),
    400,
    'invalid_request',
  ],
  [
    'origin with an impossible address',
    'POST',
    () => '/v1/runs',
    () => ({ token: agent(), body: { profile_id: 'p', intent: 'x', origins: ['http://1.2.3.4.5'] } }),
    400,
    'invalid_request',
  ],
  [
    'arguments nested 5000 deep',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), raw: `{"tool":"browser.observe","version":"1.2.0","arguments":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}` }),
    400,
    'invalid_arguments',
  ],
  [
    'non-http origin',
    'POST',
    () => '/v1/runs',
    () => ({ token: agent(), body: { profile_id: 'p', intent: 'x', origins: ['file://x'] } }),
    400,
    'invalid_request',
  ],
  [
    'profile id with a slash',
    'POST',
    () => '/v1/runs',
    () => ({ token: agent(), body: { profile_id: '../etc', intent: 'x', origins: ['http://a.test'] } }),
    400,
    'invalid_request',
  ],
  [
    'empty intent',
    'POST',
    () => '/v1/runs',
    () => ({ token: agent(), body: { profile_id: 'p', intent: '', origins: ['http://a.test'] } }),
    400,
    'invalid_request',
  ],
  [
    'operator creating a run',
    'POST',
    () => '/v1/runs',
    () => ({ token: parties.operator.token, body: { profile_id: 'p', intent: 'x', origins: ['http://a.test'] } }),
    403,
    'forbidden',
  ],
  ['oversized body', 'POST', () => '/v1/runs', () => ({ token: agent(), raw: JSON.stringify({ intent: 'x'.repeat(300_000) }) }), 413, 'payload_too_large'],
  ['unknown run', 'GET', () => '/v1/runs/run_doesnotexist', () => ({ token: agent() }), 404, 'not_found'],
  ['unknown route', 'GET', () => '/v1/nothing-here', () => ({ token: agent() }), 404, 'not_found'],
  ['empty message', 'POST', () => `/v1/runs/${runId}/messages`, () => ({ token: owner(), body: { text: '' } }), 400, 'invalid_request'],
  [
    'message with an unknown field',
    'POST',
    () => `/v1/runs/${runId}/messages`,
    () => ({ token: owner(), body: { text: 'x', trust: 'trusted' } }),
    400,
    'invalid_request',
  ],
  ['message to an unknown run', 'POST', () => '/v1/runs/run_nope/messages', () => ({ token: owner(), body: { text: 'x' } }), 404, 'not_found'],
  [
    'owner proposing a tool call',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: owner(), body: { tool: 'browser.observe', version: '1.2.0', arguments: {} } }),
    403,
    'forbidden',
  ],
  [
    'unknown tool',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: { tool: 'browser.eval', version: '1.2.0', arguments: {} } }),
    400,
    'invalid_arguments',
  ],
  [
    'unknown version',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: { tool: 'browser.observe', version: '9.9.9', arguments: {} } }),
    400,
    'invalid_arguments',
  ],
  [
    'unknown envelope field',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: { tool: 'browser.observe', version: '1.2.0', arguments: {}, approved: true } }),
    400,
    'invalid_arguments',
  ],
  [
    'arguments not an object',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: { tool: 'browser.observe', version: '1.2.0', arguments: 'x' } }),
    400,
    'invalid_arguments',
  ],
  [
    'unknown argument field',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: { tool: 'browser.observe', version: '1.2.0', arguments: { selector: '#x' } } }),
    400,
    'invalid_arguments',
  ],
  [
    'navigate without url',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: { tool: 'browser.navigate', version: '1.2.0', arguments: {} } }),
    400,
    'invalid_arguments',
  ],
  [
    'revision as a string',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: act({ action: 'click', revision: '1', reference: 'e1' }) }),
    400,
    'invalid_arguments',
  ],
  [
    'scroll delta as a string',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: act({ action: 'scroll', revision: 1, reference: 'e1', delta: '100' }) }),
    400,
    'invalid_arguments',
  ],
  [
    'scroll delta not an integer',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: act({ action: 'scroll', revision: 1, reference: 'e1', delta: 100.5 }) }),
    400,
    'invalid_arguments',
  ],
  [
    'scroll delta a boolean',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: act({ action: 'scroll', revision: 1, reference: 'e1', delta: true }) }),
    400,
    'invalid_arguments',
  ],
  [
    'unknown action',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: act({ action: 'upload', revision: 1, reference: 'e1' }) }),
    400,
    'invalid_arguments',
  ],
  [
    'click with extra field',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: act({ action: 'click', revision: 1, reference: 'e1', force: true }) }),
    400,
    'invalid_arguments',
  ],
  [
    'reference that is a selector',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: act({ action: 'click', revision: 1, reference: 'button.submit' }) }),
    400,
    'invalid_arguments',
  ],
  [
    'type without text',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: act({ action: 'type', revision: 1, reference: 'e1' }) }),
    400,
    'invalid_arguments',
  ],
  [
    'postcondition of an unknown kind',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: act({ action: 'click', revision: 1, reference: 'e1', postcondition: { success: { kind: 'selector', css: '#ok' } } }) }),
    400,
    'invalid_arguments',
  ],
  [
    'postcondition with an empty name',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({
      token: agent(),
      body: act({ action: 'click', revision: 1, reference: 'e1', postcondition: { success: { kind: 'control', role: 'button', name: '' } } }),
    }),
    400,
    'invalid_arguments',
  ],
  [
    'postcondition with a regex field',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({
      token: agent(),
      body: act({ action: 'click', revision: 1, reference: 'e1', postcondition: { success: { kind: 'text', text: 'ok', pattern: 'o.*' } } }),
    }),
    400,
    'invalid_arguments',
  ],
  [
    'postcondition timeout 5001',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({
      token: agent(),
      body: act({ action: 'click', revision: 1, reference: 'e1', postcondition: { success: { kind: 'text', text: 'ok' }, timeout_ms: 5001 } }),
    }),
    400,
    'invalid_arguments',
  ],
  [
    'postcondition timeout -1',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({
      token: agent(),
      body: act({ action: 'click', revision: 1, reference: 'e1', postcondition: { success: { kind: 'text', text: 'ok' }, timeout_ms: -1 } }),
    }),
    400,
    'invalid_arguments',
  ],
  [
    'postcondition timeout as a string',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({
      token: agent(),
      body: act({ action: 'click', revision: 1, reference: 'e1', postcondition: { success: { kind: 'text', text: 'ok' }, timeout_ms: '2000' } }),
    }),
    400,
    'invalid_arguments',
  ],
  [
    'postcondition on a call pinned to 1.1.0',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({
      token: agent(),
      body: { ...act({ action: 'click', revision: 1, reference: 'e1', postcondition: { success: { kind: 'text', text: 'ok' } } }), version: '1.1.0' },
    }),
    400,
    'invalid_arguments',
  ],
  [
    'observe with both continuation and wait_for',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({
      token: agent(),
      body: { tool: 'browser.observe', version: '1.2.0', arguments: { continuation: 'abc', wait_for: { success: { kind: 'text', text: 'ok' } } } },
    }),
    400,
    'invalid_arguments',
  ],
  [
    'wait_for on observe pinned to 1.1.0',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: { tool: 'browser.observe', version: '1.1.0', arguments: { wait_for: { success: { kind: 'text', text: 'ok' } } } } }),
    400,
    'invalid_arguments',
  ],
  // A call pinned to 1.4.0 keeps exactly the 1.4.0 arguments: nothing 1.5.0 added is accepted.
  [
    'act naming a point pinned to 1.4.0',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: { ...act({ action: 'click', revision: 1, point: { x: 10, y: 10 } }), version: '1.4.0' } }),
    400,
    'invalid_arguments',
  ],
  [
    'hover pinned to 1.4.0',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: { ...act({ action: 'hover', revision: 1, reference: 'e1' }), version: '1.4.0' } }),
    400,
    'invalid_arguments',
  ],
  [
    'history move pinned to 1.4.0',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: { tool: 'browser.navigate', version: '1.4.0', arguments: { history: 'back' } } }),
    400,
    'invalid_arguments',
  ],
  [
    'screenshot on observe pinned to 1.4.0',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: agent(), body: { tool: 'browser.observe', version: '1.4.0', arguments: { screenshot: true } } }),
    400,
    'invalid_arguments',
  ],
  [
    'a 1.5.0 control state in a postcondition pinned to 1.4.0',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({
      token: agent(),
      body: {
        ...act({
          action: 'click',
          revision: 1,
          reference: 'e1',
          postcondition: { success: { kind: 'control', role: 'tab', name: 'Billing', selected: true } },
        }),
        version: '1.4.0',
      },
    }),
    400,
    'invalid_arguments',
  ],
  [
    'a 1.5.0 control state in wait_for pinned to 1.4.0',
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({
      token: agent(),
      body: {
        tool: 'browser.observe',
        version: '1.4.0',
        arguments: { wait_for: { success: { kind: 'control', role: 'textbox', name: 'Day', value: '2026-12-15' } } },
      },
    }),
    400,
    'invalid_arguments',
  ],
  [
    'proposal on an unknown run',
    'POST',
    () => '/v1/runs/run_nope/tool-calls',
    () => ({ token: agent(), body: { tool: 'browser.observe', version: '1.2.0', arguments: {} } }),
    404,
    'not_found',
  ],
  [
    "proposal on a stranger's run",
    'POST',
    () => `/v1/runs/${runId}/tool-calls`,
    () => ({ token: parties.strangerAgent.token, body: { tool: 'browser.observe', version: '1.2.0', arguments: {} } }),
    404,
    'not_found',
  ],
  ['unknown tool call', 'GET', () => '/v1/tool-calls/call_nope', () => ({ token: agent() }), 404, 'not_found'],
  ['a stranger reading a call', 'GET', () => `/v1/tool-calls/${callId}`, () => ({ token: parties.strangerAgent.token }), 404, 'not_found'],
  ['wait_ms not a number', 'GET', () => `/v1/tool-calls/${callId}?wait_ms=abc`, () => ({ token: agent() }), 400, 'invalid_request'],
  ['wait_ms too long', 'GET', () => `/v1/tool-calls/${callId}?wait_ms=99999`, () => ({ token: agent() }), 400, 'invalid_request'],
  ['wait_ms negative', 'GET', () => `/v1/tool-calls/${callId}?wait_ms=-1`, () => ({ token: agent() }), 400, 'invalid_request'],
  ['unknown query parameter', 'GET', () => `/v1/tool-calls/${callId}?verbose=1`, () => ({ token: agent() }), 400, 'invalid_request'],
  ['agent listing approvals', 'GET', () => '/v1/approvals?state=pending', () => ({ token: agent() }), 403, 'forbidden'],
  ['unknown approval state', 'GET', () => '/v1/approvals?state=everything', () => ({ token: owner() }), 400, 'invalid_request'],
  [
    'decision not approve or deny',
    'POST',
    () => `/v1/approvals/${approvalId}/decision`,
    () => ({ token: owner(), body: { decision: 'yes' } }),
    400,
    'invalid_request',
  ],
  [
    'decision with an extra field',
    'POST',
    () => `/v1/approvals/${approvalId}/decision`,
    () => ({ token: owner(), body: { decision: 'approve', arguments: {} } }),
    400,
    'invalid_request',
  ],
  [
    'decision on an unknown approval',
    'POST',
    () => '/v1/approvals/apr_nope/decision',
    () => ({ token: owner(), body: { decision: 'approve' } }),
    404,
    'not_found',
  ],
  ['agent deciding', 'POST', () => `/v1/approvals/${approvalId}/decision`, () => ({ token: agent(), body: { decision: 'approve' } }), 403, 'forbidden'],
  [
    'report with an unknown status',
    'POST',
    () => `/v1/runs/${runId}/report`,
    () => ({ token: agent(), body: { status: 'done', summary: 'x' } }),
    400,
    'invalid_request',
  ],
  ['report without summary', 'POST', () => `/v1/runs/${runId}/report`, () => ({ token: agent(), body: { status: 'completed' } }), 400, 'invalid_request'],
  ['owner reporting', 'POST', () => `/v1/runs/${runId}/report`, () => ({ token: owner(), body: { status: 'completed', summary: 'x' } }), 403, 'forbidden'],
  [
    'report while a call waits for approval',
    'POST',
    () => `/v1/runs/${runId}/report`,
    () => ({ token: agent(), body: { status: 'completed', summary: 'x' } }),
    409,
    'run_not_active',
  ],
  ['cancel of an unknown run', 'POST', () => '/v1/runs/run_nope/cancel', () => ({ token: owner() }), 404, 'not_found'],
  ['operator cancelling', 'POST', () => `/v1/runs/${runId}/cancel`, () => ({ token: parties.operator.token }), 403, 'forbidden'],
];

/** Each case's whole error message, by the case's name (a function where it names an id made in beforeAll). */
const MESSAGES: Record<string, string | (() => string)> = {
  'no token': 'send Authorization: Bearer <token>',
  'unknown token': 'the bearer token is not known',
  'malformed Authorization header': 'send Authorization: Bearer <token>',
  'malformed JSON': 'Malformed JSON in request body',
  'JSON that is not an object': '✖ Invalid input: expected object, received array',
  'body without JSON content type': 'Unsupported Media Type',
  'unknown field on a run': '✖ Unrecognized key: "admin"',
  'deadline as a string': '✖ Invalid input: expected number, received string\n  → at deadline_ms',
  'origin with a path':
    '✖ an http(s) origin such as https://example.com or http://127.0.0.1:8080\n  → at origins[0]\n✖ an origin the URL parser accepts as it is (a valid host and a port up to 65535)\n  → at origins[0]',
  'origin with an impossible port': '✖ an origin the URL parser accepts as it is (a valid host and a port up to 65535)\n  → at origins[0]',
  'origin with an impossible address': '✖ an origin the URL parser accepts as it is (a valid host and a port up to 65535)\n  → at origins[0]',
  'arguments nested 5000 deep': '✖ nested at most 16 levels deep\n  → at arguments',
  'non-http origin':
    '✖ an http(s) origin such as https://example.com or http://127.0.0.1:8080\n  → at origins[0]\n✖ an origin the URL parser accepts as it is (a valid host and a port up to 65535)\n  → at origins[0]',
  'profile id with a slash': '✖ letters, digits, _ and -, at most 48\n  → at profile_id',
  'empty intent': '✖ Too small: expected string to have >=1 characters\n  → at intent',
  'operator creating a run': 'this endpoint is for owner or agent principals, not operator',
  'oversized body': 'request bodies are limited to 262144 bytes',
  'unknown run': 'no run run_doesnotexist',
  'unknown route': 'no route GET /v1/nothing-here',
  'empty message': '✖ Too small: expected string to have >=1 characters\n  → at text',
  'message with an unknown field': '✖ Unrecognized key: "trust"',
  'message to an unknown run': 'no run run_nope',
  'owner proposing a tool call': 'this endpoint is for agent principals, not owner',
  'unknown tool': '✖ Invalid option: expected one of "browser.navigate"|"browser.observe"|"browser.act"\n  → at tool',
  'unknown version': '✖ Invalid option: expected one of "1.5.0"|"1.4.0"|"1.3.0"|"1.2.0"|"1.1.0"\n  → at version',
  'unknown envelope field': '✖ Unrecognized key: "approved"',
  'arguments not an object': '✖ Invalid input: expected record, received string\n  → at arguments',
  'unknown argument field': 'browser.observe 1.2.0: ✖ Unrecognized key: "selector"',
  'navigate without url': 'browser.navigate 1.2.0: ✖ Invalid input: expected string, received undefined\n  → at url',
  'revision as a string': 'browser.act 1.2.0: ✖ Invalid input: expected number, received string\n  → at revision',
  'scroll delta as a string': 'browser.act 1.2.0: ✖ Invalid input: expected number, received string\n  → at delta',
  'scroll delta not an integer': 'browser.act 1.2.0: ✖ Invalid input: expected int, received number\n  → at delta',
  'scroll delta a boolean': 'browser.act 1.2.0: ✖ Invalid input: expected number, received boolean\n  → at delta',
  'unknown action':
    "browser.act 1.2.0: ✖ Invalid discriminator value. Expected 'click' | 'type' | 'press' | 'select' | 'check' | 'uncheck' | 'scroll'\n  → at action",
  'click with extra field': 'browser.act 1.2.0: ✖ Unrecognized key: "force"',
  'reference that is a selector': 'browser.act 1.2.0: ✖ an aria snapshot ref such as e12 or f1e3\n  → at reference',
  'type without text': 'browser.act 1.2.0: ✖ Invalid input: expected string, received undefined\n  → at text',
  'postcondition of an unknown kind':
    "browser.act 1.2.0: ✖ Invalid discriminator value. Expected 'control' | 'text' | 'region' | 'location' | 'row'\n  → at postcondition.success.kind",
  'postcondition with an empty name':
    'browser.act 1.2.0: ✖ Too small: expected string to have >=1 characters\n  → at postcondition.success.name\n✖ must not be blank\n  → at postcondition.success.name',
  'postcondition with a regex field': 'browser.act 1.2.0: ✖ Unrecognized key: "pattern"\n  → at postcondition.success',
  'postcondition timeout 5001': 'browser.act 1.2.0: ✖ Too big: expected number to be <=5000\n  → at postcondition.timeout_ms',
  'postcondition timeout -1': 'browser.act 1.2.0: ✖ Too small: expected number to be >=0\n  → at postcondition.timeout_ms',
  'postcondition timeout as a string': 'browser.act 1.2.0: ✖ Invalid input: expected number, received string\n  → at postcondition.timeout_ms',
  'postcondition on a call pinned to 1.1.0': 'browser.act 1.1.0: ✖ Unrecognized key: "postcondition"',
  'observe with both continuation and wait_for': 'browser.observe 1.2.0: ✖ continuation and wait_for are mutually exclusive',
  'wait_for on observe pinned to 1.1.0': 'browser.observe 1.1.0: ✖ Unrecognized key: "wait_for"',
  'act naming a point pinned to 1.4.0':
    'browser.act 1.4.0: ✖ Unrecognized key: "point"\n✖ Invalid input: expected string, received undefined\n  → at reference',
  'hover pinned to 1.4.0':
    "browser.act 1.4.0: ✖ Invalid discriminator value. Expected 'click' | 'type' | 'press' | 'select' | 'check' | 'uncheck' | 'scroll'\n  → at action",
  'history move pinned to 1.4.0': 'browser.navigate 1.4.0: ✖ Unrecognized key: "history"\n✖ Invalid input: expected string, received undefined\n  → at url',
  'screenshot on observe pinned to 1.4.0': 'browser.observe 1.4.0: ✖ Unrecognized key: "screenshot"',
  'a 1.5.0 control state in a postcondition pinned to 1.4.0': 'browser.act 1.4.0: ✖ Unrecognized key: "selected"\n  → at postcondition.success',
  'a 1.5.0 control state in wait_for pinned to 1.4.0': 'browser.observe 1.4.0: ✖ Unrecognized key: "value"\n  → at wait_for.success',
  'proposal on an unknown run': 'no run run_nope',
  "proposal on a stranger's run": () => `no run ${runId}`,
  'unknown tool call': 'no tool call call_nope',
  'a stranger reading a call': () => `no tool call ${callId}`,
  'wait_ms not a number': '✖ an integer number of ms, 0-30000\n  → at wait_ms',
  'wait_ms too long': '✖ Too big: expected number to be <=30000\n  → at wait_ms',
  'wait_ms negative': '✖ an integer number of ms, 0-30000\n  → at wait_ms',
  'unknown query parameter': '✖ Unrecognized key: "verbose"',
  'agent listing approvals': 'this endpoint is for owner principals, not agent',
  'unknown approval state': '✖ Invalid option: expected one of "pending"|"approved"|"denied"|"cancelled"\n  → at state',
  'decision not approve or deny': '✖ Invalid option: expected one of "approve"|"deny"\n  → at decision',
  'decision with an extra field': '✖ Unrecognized key: "arguments"',
  'decision on an unknown approval': 'no approval apr_nope',
  'agent deciding': 'this endpoint is for owner principals, not agent',
  'report with an unknown status': '✖ Invalid option: expected one of "completed"|"partial"|"uncertain"|"failed"\n  → at status',
  'report without summary': '✖ Invalid input: expected string, received undefined\n  → at summary',
  'owner reporting': 'this endpoint is for agent principals, not owner',
  'report while a call waits for approval': 'the run is waiting_for_approval, not running',
  'cancel of an unknown run': 'no run run_nope',
  'operator cancelling': 'this endpoint is for owner or agent principals, not operator',
};

describe('bad input answers a typed 4xx and changes nothing', () => {
  it.each(cases)('%s: %s %s', async (name, method, path, options, status, code) => {
    const before = await counts();
    const answer = await callError(method, path(), options());
    const message = MESSAGES[name];
    if (message === undefined) throw new Error(`the case "${name}" has no message in MESSAGES`);
    expect({ status: answer.status, body: answer.body }).toEqual({
      status,
      body: errorBody(code, typeof message === 'function' ? message() : message),
    });
    const after = await counts();
    // A rejected proposal is recorded as a rejection and nothing else.
    const rejectionStored = code === 'invalid_arguments' && after.tool_calls === (before.tool_calls ?? 0) + 1;
    expect({ ...after, tool_calls: rejectionStored ? before.tool_calls : after.tool_calls }).toEqual(before);
  });

  it('every error body has exactly code, message and request_id (and details only where documented)', async () => {
    const answer = await callError('GET', '/v1/runs/run_nope', { token: agent(), headers: { 'X-Request-Id': 'req-123' } });
    expect(answer.body).toEqual({ error: { code: 'not_found', message: 'no run run_nope', request_id: 'req-123' } });
  });
});
