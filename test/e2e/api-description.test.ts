import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileErrors, validate } from '@readme/openapi-parser';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { BASE_CHROMIUM_ARGS } from '../../browser-host/profiles.ts';
import { createApp } from '../../edge/app.ts';
import { ApiClient } from '../../scripts/api-client.ts';
import { EDGE_RUNTIMES } from '../../scripts/local-stack.ts';
import { errorBody } from '../support/error-body.ts';
import { stackTestPerRuntime } from '../support/stack-fixture.ts';

// The OpenAPI document and the API reference page, checked against the live edge on each
// runtime: the document is valid OpenAPI 3.1 (a maintained validator), it lists exactly the
// routes the app serves, the example request it gives for each route is accepted, bad input is
// answered with a typed 4xx, and /docs renders the endpoint list in real Chromium without
// fetching anything from anywhere but the edge.

/** A documented operation, as far as these tests read it. */
interface Operation {
  method: string;
  path: string;
  parameters?: { name: string; in: 'path' | 'query'; schema?: { examples?: unknown[] } }[];
  requestBody?: { content: Record<string, { schema?: { examples?: unknown[] } }> };
  responses: Record<string, unknown>;
  security?: unknown[];
}

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Omit<Operation, 'method' | 'path'>>>;
}

/** Error codes that mean the request itself was refused for its shape, type or size. */
const SHAPE_REFUSALS = ['invalid_request', 'invalid_arguments', 'malformed_json', 'unsupported_media_type', 'payload_too_large', 'unsupported_version'];

/** The id prefix of the objects a path segment names (edge/db/ids.ts). */
const ID_PREFIX: Record<string, string> = {
  runs: 'run_',
  'tool-calls': 'call_',
  approvals: 'apr_',
  grants: 'grt_',
  'sign-ins': 'sie_',
  principals: 'prn_',
  hosts: 'hst_',
  memories: 'mem_',
  'memory-suggestions': 'sug_',
};

/** The id prefix of the objects a path parameter names, where the parameter says more than the path's first segment. */
const PARAMETER_PREFIX: Record<string, string> = {
  file_id: 'file_',
  artifact_id: 'art_',
};

/**
 * POSTs a 300 KiB JSON body to /v1/runs, with `token` or none, with its Content-Length or
 * `chunked` (no length: the edge learns the size only by reading); the status and the parsed body.
 */
async function largePost(edgeUrl: string, token: string | undefined, chunked = false): Promise<{ status: number; body: unknown }> {
  const bytes = new TextEncoder().encode(JSON.stringify({ intent: 'x'.repeat(300 * 1024) }));
  const payload = chunked
    ? new ReadableStream<Uint8Array>({
        start(controller) {
          for (let offset = 0; offset < bytes.length; offset += 16 * 1024) controller.enqueue(bytes.slice(offset, offset + 16 * 1024));
          controller.close();
        },
      })
    : bytes;
  const response = await fetch(`${edgeUrl}/v1/runs`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }) },
    body: payload,
    ...(chunked ? { duplex: 'half' } : {}),
  } as RequestInit);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the assertion shows the text
  }
  return { status: response.status, body };
}

/** Routes authenticated by a signature inside the body: no example can carry a valid one. */
// Routes a host calls with its own signed token (HS256 over the hosts' shared secret), never an
// API token: an example sent with an API token must be refused as unauthenticated.
const SIGNED_BODY_ROUTES = ['POST /v1/host/ceremony-events', 'PUT /v1/host/snapshots/{profile_id}', 'GET /v1/host/snapshots/{profile_id}/{version}'];

function operationsOf(document: OpenApiDocument): Operation[] {
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({ ...operation, method: method.toUpperCase(), path })),
  );
}

/**
 * The order the example requests go in: the principal first, then the other creations, so that
 * later requests on `{id}` paths can name objects that exist (and the claim finds the queued
 * run); then other writes on them, then reads, then the requests that end something (decide,
 * report, cancel, revoke).
 */
function exampleOrder(operation: Operation): number {
  // The principal it creates is the first principal an answer names (the owner webhook's answer
  // names the local owner), so the rotate and revoke examples act on it, never on a local
  // principal whose token the other examples use.
  if (operation.method === 'POST' && operation.path === '/v1/principals') return -1;
  // Voiding every grant of a profile version would leave the example grant nothing to revoke.
  if (operation.path.endsWith('/revoke-grants')) return 4;
  if (/\/(decision|report|cancel|revoke)$/.test(operation.path)) return 3;
  if (operation.method === 'GET') return 2;
  return operation.path.includes('{id}') || operation.path.endsWith('/claim') ? 1 : 0;
}

const profileDir = mkdtempSync(join(tmpdir(), 'docs-chromium-'));
let browser: BrowserContext;

beforeAll(async () => {
  browser = await chromium.launchPersistentContext(profileDir, {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: [...BASE_CHROMIUM_ARGS],
  });
});

afterAll(async () => {
  await browser?.close();
  rmSync(profileDir, { recursive: true, force: true });
});

const descriptionTest = stackTestPerRuntime(EDGE_RUNTIMES, { headless: true });

describe.each(EDGE_RUNTIMES)('the API description, edge on %s', (runtime) => {
  const it = descriptionTest(runtime);
  let document: OpenApiDocument;

  it.beforeAll(async ({ stack }) => {
    document = (await (await fetch(`${stack.edgeUrl}/v1/openapi.json`)).json()) as OpenApiDocument;
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(document) as never);
    expect(result.valid ? [] : compileErrors(result)).toEqual([]);
  });

  it('lists every route the app serves, and no other', () => {
    const app = createApp(() => {
      throw new Error('no request is served here');
    });
    // The owner's console is web pages, not the API (test/edge/console-sessions.test.ts and
    // test/e2e/console.test.ts cover it). The MCP endpoint describes itself (tools/list, its RFC
    // 9728 metadata), from the same zod contracts (test/e2e/mcp.test.ts).
    const served = new Set(
      app.routes
        .filter((route) => route.method !== 'ALL' && !route.path.startsWith('/console') && route.path !== '/mcp' && !route.path.startsWith('/.well-known/'))
        .map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, '{$1}')}`),
    );
    const documented = new Set(operationsOf(document).map((operation) => `${operation.method} ${operation.path}`));
    expect([...documented].sort()).toEqual([...served].sort());
  });

  it("accepts each route's documented example request", async ({ stack }) => {
    const tokens = [stack.tokens.owner, stack.tokens.agent, stack.tokens.operator];
    const live: Record<string, string> = {};
    const problems: string[] = [];
    const unsuccessful: string[] = [];
    const operations = operationsOf(document).sort((a, b) => exampleOrder(a) - exampleOrder(b));
    for (const operation of operations) {
      let path = operation.path;
      const query = new URLSearchParams();
      for (const parameter of operation.parameters ?? []) {
        const examples = (parameter.schema?.examples ?? []).map(String);
        if (parameter.in === 'query') {
          if (examples[0] !== undefined) query.set(parameter.name, examples[0]);
          continue;
        }
        // An example id cannot exist on a fresh edge: name the live object an earlier example made.
        const prefix = PARAMETER_PREFIX[parameter.name] ?? ID_PREFIX[path.split('/')[2] ?? ''];
        const value = (prefix && live[prefix]) ?? examples.find((example) => prefix && example.startsWith(prefix)) ?? examples[0];
        if (value === undefined) problems.push(`${operation.method} ${operation.path}: no example for {${parameter.name}}`);
        path = path.replace(`{${parameter.name}}`, encodeURIComponent(value ?? ''));
      }
      const body = operation.requestBody?.content['application/json']?.schema?.examples?.[0];
      const jsonRequest = operation.requestBody?.content['application/json'] !== undefined;
      if (jsonRequest && body === undefined) problems.push(`${operation.method} ${operation.path}: no example body`);
      const target = `${path}${query.size ? `?${query}` : ''}`;

      // The document says a route needs a bearer token, not whose: try the local principals in turn.
      let answer = await new ApiClient(stack.edgeUrl, tokens[0]!).raw(operation.method, target, body);
      for (const token of tokens.slice(1)) {
        if (!operation.security || errorCodeOf(answer.body) !== 'forbidden') break;
        answer = await new ApiClient(stack.edgeUrl, token).raw(operation.method, target, body);
      }
      const code = errorCodeOf(answer.body);
      const what = `${operation.method} ${target} answered ${answer.status}${code ? ` ${code}` : ''}`;
      if (!Object.keys(operation.responses).includes(String(answer.status))) problems.push(`${what}, which the document does not list`);
      const signedBody = SIGNED_BODY_ROUTES.includes(`${operation.method} ${operation.path}`);
      if (signedBody && code !== 'unauthenticated') problems.push(`${what}: an unsigned example must be refused as unauthenticated`);
      if (!signedBody && code && [...SHAPE_REFUSALS, 'forbidden', 'unauthenticated'].includes(code)) problems.push(`${what}: the example was refused`);
      // Only what an example made counts: a listing (the hosts' list names the stack's own host) does not.
      if (operation.method !== 'get') collectIds(answer.body, live);
      if (answer.status >= 300) unsuccessful.push(`${operation.method} ${operation.path}`);
    }
    expect(problems).toEqual([]);
    // The examples did create what later examples named, and every example succeeded except two
    // that the state makes fail after their input was accepted: no approval is pending (the
    // example call is a navigation, which needs none), and the run was already ended by the
    // example report.
    // The drain and removal examples name the host the registration example added.
    expect(Object.keys(live).sort()).toEqual(expect.arrayContaining(['call_', 'grt_', 'hst_', 'prn_', 'run_']));
    expect(live.prn_).not.toMatch(/^prn_local_/);
    // These fail by design: no sign-in episode exists on a fresh edge to restart, no agent
    // has suggested a memory on a fresh edge for the owner to decide, the
    // ceremony event and the two snapshot examples carry no host-signed token, the example run takes the ordinary
    // agent path (its intent is no recipe's phrase), so it has no recipe timeline, its
    // example navigation downloads nothing, so it has no artifact to read, and the example
    // evidence bundle was not scored on this edge's frozen corpora (`evidence_mismatch`).
    expect(unsuccessful.sort()).toEqual([
      'GET /v1/host/snapshots/{profile_id}/{version}',
      'GET /v1/runs/{id}/artifacts/{artifact_id}',
      'GET /v1/runs/{id}/recipe',
      'POST /v1/approvals/{id}/decision',
      'POST /v1/host/ceremony-events',
      'POST /v1/memory-evidence',
      'POST /v1/memory-suggestions/{id}/decision',
      'POST /v1/runs/{id}/cancel',
      'POST /v1/sign-ins/{id}/restart',
      'PUT /v1/host/snapshots/{profile_id}',
    ]);
  });

  it('answers bad input with a typed 4xx', async ({ stack, agent, owner }) => {
    const run = (await owner.raw('POST', '/v1/runs', { profile_id: 'bad-input', intent: 'bad input', origins: ['http://127.0.0.1:8080'] })).body as {
      id: string;
    };
    const malformed = await fetch(`${stack.edgeUrl}/v1/runs`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${stack.tokens.owner}`, 'Content-Type': 'application/json' },
      body: '{"profile_id":',
    });
    const answers = {
      unknownField: await owner.raw('POST', '/v1/runs', { profile_id: 'x', intent: 'x', origins: ['http://127.0.0.1:8080'], extra: 1 }),
      malformedJson: { status: malformed.status, body: await malformed.json() },
      coercibleArgument: await agent.raw('POST', `/v1/runs/${run.id}/tool-calls`, {
        tool: 'browser.act',
        version: '1.2.0',
        arguments: { action: 'scroll', revision: 0, reference: 'e1', delta: '100' },
      }),
      badQuery: await agent.raw('GET', '/v1/tool-calls/call_x?wait_ms=soon'),
      noToken: await new ApiClient(stack.edgeUrl, '').raw('GET', `/v1/runs/${run.id}`),
      unknownRoute: await owner.raw('GET', '/v1/nothing-here'),
      // 300 KiB: over the 256 KiB limit, and never read by a route that refuses the caller first.
      largeBodyNoToken: await largePost(stack.edgeUrl, undefined),
      largeBody: await largePost(stack.edgeUrl, stack.tokens.owner),
      largeChunkedNoToken: await largePost(stack.edgeUrl, undefined, true),
      largeChunked: await largePost(stack.edgeUrl, stack.tokens.owner, true),
    };
    expect(Object.fromEntries(Object.entries(answers).map(([name, answer]) => [name, [answer.status, errorCodeOf(answer.body)]]))).toEqual({
      unknownField: [400, 'invalid_request'],
      malformedJson: [400, 'malformed_json'],
      coercibleArgument: [400, 'invalid_arguments'],
      badQuery: [400, 'invalid_request'],
      noToken: [401, 'unauthenticated'],
      unknownRoute: [404, 'not_found'],
      largeBodyNoToken: [413, 'payload_too_large'],
      largeBody: [413, 'payload_too_large'],
      // Without a length, the edge reads the body to learn its size, before anything else.
      largeChunkedNoToken: [413, 'payload_too_large'],
      largeChunked: [413, 'payload_too_large'],
    });
    const tooLarge = errorBody('payload_too_large', 'request bodies are limited to 262144 bytes');
    expect(Object.fromEntries(Object.entries(answers).map(([name, answer]) => [name, answer.body]))).toEqual({
      unknownField: errorBody('invalid_request', '✖ Unrecognized key: "extra"'),
      malformedJson: errorBody('malformed_json', 'Malformed JSON in request body'),
      coercibleArgument: errorBody('invalid_arguments', 'browser.act 1.2.0: ✖ Invalid input: expected number, received string\n  → at delta'),
      badQuery: errorBody('invalid_request', '✖ an integer number of ms, 0-30000\n  → at wait_ms'),
      noToken: errorBody('unauthenticated', 'send Authorization: Bearer <token>'),
      unknownRoute: errorBody('not_found', 'no route GET /v1/nothing-here'),
      largeBodyNoToken: tooLarge,
      largeBody: tooLarge,
      largeChunkedNoToken: tooLarge,
      largeChunked: tooLarge,
    });
  });

  it('renders the endpoint list at /docs in Chromium, fetching nothing from anywhere but the edge', async ({ stack }) => {
    const page = await browser.newPage();
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    try {
      await page.goto(`${stack.edgeUrl}/docs`);
      const operations = operationsOf(document);
      const rows = page.locator('.opblock');
      await expect.poll(() => rows.count(), { timeout: 20_000 }).toBe(operations.length);
      const listed = await rows.evaluateAll((elements) =>
        elements.map(
          (element) =>
            `${element.querySelector('.opblock-summary-method')?.textContent} ${element.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`,
        ),
      );
      expect(listed.sort()).toEqual(operations.map((operation) => `${operation.method} ${operation.path}`).sort());
      expect(requested.filter((url) => !url.startsWith(`${stack.edgeUrl}/`) && !url.startsWith('data:'))).toEqual([]);
      expect(requested).toEqual(
        expect.arrayContaining([
          `${stack.edgeUrl}/docs/assets/swagger-ui-dist/swagger-ui-bundle.js`,
          `${stack.edgeUrl}/docs/assets/swagger-ui-dist/swagger-ui.css`,
          `${stack.edgeUrl}/v1/openapi.json`,
        ]),
      );
    } finally {
      await page.close();
    }
  });
});

/** The `error.code` of an error body, if it is one. */
function errorCodeOf(body: unknown): string | undefined {
  const error = (body as { error?: { code?: unknown } } | null)?.error;
  return typeof error?.code === 'string' ? error.code : undefined;
}

/** Records the first id of each kind (by prefix) found in an answer, for later `{id}` paths. */
function collectIds(body: unknown, into: Record<string, string>): void {
  if (Array.isArray(body)) {
    for (const item of body) collectIds(item, into);
    return;
  }
  if (typeof body !== 'object' || body === null) return;
  for (const [key, value] of Object.entries(body)) {
    if ((key === 'id' || key.endsWith('_id')) && typeof value === 'string') {
      const prefix = [...Object.values(ID_PREFIX), ...Object.values(PARAMETER_PREFIX)].find((candidate) => value.startsWith(candidate));
      if (prefix && !(prefix in into)) into[prefix] = value;
    } else {
      collectIds(value, into);
    }
  }
}
