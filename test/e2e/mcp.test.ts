import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect } from 'vitest';
import { startAccountSite } from '../../scripts/account-site.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { type RunView, RunView as RunViewSchema, ToolCallView } from '../../shared/api.ts';
import { stackTestPerRuntime } from '../support/stack-fixture.ts';

// Agents connect over MCP: the official TypeScript client SDK over Streamable HTTP, and the MCP
// Inspector CLI, against the real edge (Workers under wrangler dev, and Node) and the real host
// (Chromium), on the fixture site: every call goes through the governed pipeline.

const run = promisify(execFile);
const INSPECTOR_BUILD = join(dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector-cli/package.json')), 'build');
const INSPECTOR = join(INSPECTOR_BUILD, 'cli.js');
// inspector-cli 1.0.3 looks for its package.json relative to the working directory but imports it
// relative to itself: run it from its build directory, where both agree.
const INSPECTOR_CWD = INSPECTOR_BUILD;

type TextBlock = { type: 'text'; text: string };

const RUNTIMES = ['workers', 'node'] as const;
const mcpTest = stackTestPerRuntime(RUNTIMES, { headless: true });

/** The stack's MCP endpoint. */
const mcpUrlOf = (stack: LocalStack) => new URL('/mcp', stack.edgeUrl);

describe.each(RUNTIMES)('the MCP endpoint on the %s edge', (runtime) => {
  const it = mcpTest(runtime);

  /** An official MCP client connected with `token`; with `elicitations`, it shows URL-mode elicitations (collected there). */
  async function connect(stack: LocalStack, token: string, elicitations?: string[]): Promise<Client> {
    const client = new Client({ name: 'e2e-agent', version: '1.0.0' }, { capabilities: elicitations ? { elicitation: { url: {} } } : {} });
    if (elicitations) {
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        elicitations.push(String((request.params as { url?: string }).url));
        return { action: 'accept' };
      });
    }
    await client.connect(new StreamableHTTPClientTransport(mcpUrlOf(stack), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return client;
  }

  function textOf(result: object): string {
    return ((result as { content?: TextBlock[] }).content ?? []).map((block) => block.text).join('\n');
  }

  it('lists the tools with schemas from the API contracts, claims a run, navigates, observes, scrolls, parks a click for the owner and gets its postcondition from call_status', async ({
    stack,
    site,
    owner,
  }) => {
    const elicited: string[] = [];
    const client = await connect(stack, stack.tokens.agent, elicited);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(['run_claim', 'browser_navigate', 'browser_observe', 'browser_act', 'call_status', 'run_report']);
      const act = tools.find((tool) => tool.name === 'browser_act');
      expect(act?.annotations).toMatchObject({ destructiveHint: true, openWorldHint: true, readOnlyHint: false });
      expect(tools.find((tool) => tool.name === 'browser_observe')?.annotations?.readOnlyHint).toBe(true);
      expect(act?.inputSchema.type).toBe('object');
      expect(JSON.stringify(act?.inputSchema)).toContain('"postcondition"');
      // 1.5.0 navigates to a url or moves in history: one flat object, neither field required by the schema.
      const navigate = tools.find((tool) => tool.name === 'browser_navigate')?.inputSchema;
      expect(navigate?.required).toEqual(['run_id']);
      expect(Object.keys(navigate?.properties ?? {})).toEqual(['run_id', 'url', 'history']);
      expect(Object.keys(tools.find((tool) => tool.name === 'browser_observe')?.inputSchema.properties ?? {})).toContain('screenshot');

      const created = await owner.createRun({ profile_id: `mcp-${runtime}`, intent: 'Save the draft', origins: [site.origin] });
      const claimed = await client.callTool({ name: 'run_claim', arguments: { run_id: created.id } });
      expect((claimed.structuredContent as RunView).state).toBe('running');
      expect(textOf(claimed)).toContain('intent: Save the draft');

      const navigated = await client.callTool({ name: 'browser_navigate', arguments: { run_id: created.id, url: site.url('postconditions/toast.html') } });
      expect(navigated.isError).toBeFalsy();
      const page = ToolCallView.parse(navigated.structuredContent);
      expect(page.state).toBe('succeeded');
      expect(textOf(navigated)).toContain('button "Save draft"');
      expect(textOf(navigated)).toMatch(/settle: \w+ after \d+ ms/);

      const observed = ToolCallView.parse((await client.callTool({ name: 'browser_observe', arguments: { run_id: created.id } })).structuredContent);
      const snapshot = (observed.result as { snapshot: string; revision: number }).snapshot;
      const revision = (observed.result as { revision: number }).revision;
      const scrolled = await client.callTool({
        name: 'browser_act',
        arguments: { run_id: created.id, action: 'scroll', revision, reference: refOf(snapshot, 'button', 'Save draft'), delta: 200 },
      });
      expect(ToolCallView.parse(scrolled.structuredContent).state).toBe('succeeded');
      const afterScroll = ToolCallView.parse(scrolled.structuredContent).result as { revision: number; snapshot: string };

      const parked = await client.callTool({
        name: 'browser_act',
        arguments: {
          run_id: created.id,
          action: 'click',
          revision: afterScroll.revision,
          reference: refOf(afterScroll.snapshot, 'button', 'Save draft'),
          postcondition: { success: { kind: 'text', text: 'Draft saved' } },
        },
      });
      const waiting = ToolCallView.parse(parked.structuredContent);
      expect(waiting.state).toBe('waiting_for_approval');
      expect(waiting.approval_id).toMatch(/^apr_/);
      expect(textOf(parked)).toContain(`${stack.edgeUrl}/console`);
      expect(parked.isError).toBeFalsy();
      // The client was asked to show the owner's console (URL-mode elicitation); consent only.
      expect(elicited).toEqual([`${stack.edgeUrl}/console`]);
      expect(site.hits('save')).toBe(0);

      await owner.decide(waiting.approval_id as string, 'approve');
      const finished = await client.callTool({ name: 'call_status', arguments: { call_id: waiting.id, wait_ms: 30_000 } });
      const done = ToolCallView.parse(finished.structuredContent);
      expect(done.state).toBe('succeeded');
      expect((done.result as { condition?: { status: string } }).condition?.status).toBe('satisfied');
      expect(textOf(finished)).toContain('condition: satisfied');
      expect(site.hits('save')).toBe(1);

      // A navigation the policy denies is a tool error with the stable code; nothing is loaded.
      const denied = await client.callTool({ name: 'browser_navigate', arguments: { run_id: created.id, url: 'javascript:alert(1)' } });
      expect(denied.isError).toBe(true);
      expect(textOf(denied)).toMatch(/^(policy_denied|invalid_arguments): /);
      const elsewhere = await client.callTool({ name: 'browser_navigate', arguments: { run_id: created.id, url: 'http://127.0.0.1:9/elsewhere' } });
      expect(elsewhere.isError).toBe(true);
      expect(textOf(elsewhere)).toMatch(/^policy_denied: /);
      expect(elsewhere._meta?.['governed-browser/error']).toMatchObject({ code: 'policy_denied' });
      // Bad arguments too: a stale revision and a missing run id.
      const stale = await client.callTool({
        name: 'browser_act',
        arguments: { run_id: created.id, action: 'click', revision: 0, reference: refOf(afterScroll.snapshot, 'button', 'Save draft') },
      });
      expect(stale.isError).toBe(true);
      expect(textOf(stale)).toMatch(/^stale_revision: /);
      const noRun = await client.callTool({ name: 'browser_observe', arguments: {} });
      expect(textOf(noRun)).toMatch(/^invalid_arguments: /);

      const reported = await client.callTool({
        name: 'run_report',
        arguments: { run_id: created.id, status: 'completed', summary: 'Saved the draft over MCP.' },
      });
      expect((reported.structuredContent as RunView).state).toBe('completed');
    } finally {
      await client.close();
    }
  });

  it('a call that meets a sign-in wall is a tool error that says where the owner signs in, and the client is asked to show that page', async ({
    stack,
    owner,
  }) => {
    const accounts = await startAccountSite();
    const elicited: string[] = [];
    const client = await connect(stack, stack.tokens.agent, elicited);
    try {
      const created = await owner.createRun({ profile_id: `mcp-sign-in-${runtime}`, intent: 'Read my reports', origins: [accounts.origin] });
      await client.callTool({ name: 'run_claim', arguments: { run_id: created.id } });
      const walled = await client.callTool({ name: 'browser_navigate', arguments: { run_id: created.id, url: `${accounts.origin}/reports` } });
      expect(walled.isError).toBe(true);
      expect(ToolCallView.parse(walled.structuredContent).error?.code).toBe('authentication_required');
      expect(textOf(walled)).toContain(`${stack.edgeUrl}/console/sign-ins`);
      expect(elicited).toEqual([`${stack.edgeUrl}/console/sign-ins`]);
      expect((await owner.request('GET', `/v1/runs/${created.id}`, RunViewSchema)).body.state).toBe('waiting_for_authentication');
    } finally {
      await client.close();
      await accounts.close();
    }
  });

  it('answers 401 with the resource metadata for no token and a garbage token, and 403 to owner and operator tokens; the metadata describes the resource', async ({
    stack,
  }) => {
    const mcpUrl = mcpUrlOf(stack);
    const initialize = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'curl', version: '1' } },
    });
    const post = (headers: Record<string, string>) =>
      fetch(mcpUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: initialize,
      });
    const metadata = `${stack.edgeUrl}/.well-known/oauth-protected-resource/mcp`;
    for (const headers of [{}, { authorization: 'Bearer not-a-token-of-anyone-1234' }, { authorization: 'Basic abc' }] as Record<string, string>[]) {
      const answer = await post(headers);
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toContain(`Bearer resource_metadata="${metadata}"`);
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');
    }
    for (const token of [stack.tokens.owner, stack.tokens.operator]) {
      const answer = await post({ authorization: `Bearer ${token}` });
      expect(answer.status).toBe(403);
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    }
    // A local edge answers its loopback names alike (PUBLIC_URL is http://127.0.0.1:<port>).
    // (fetch sets Host itself: node:http sends the one given.)
    const withHost = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const request = httpRequest(
          mcpUrl,
          {
            method: 'POST',
            headers: { host, authorization: `Bearer ${stack.tokens.agent}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          },
          (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          },
        );
        request.on('error', reject);
        request.end(initialize);
      });
    const port = new URL(stack.edgeUrl).port;
    expect(await withHost(`127.0.0.1:${port}`)).toBe(200);
    expect(await withHost(`localhost:${port}`)).toBe(200);
    expect(await withHost(`localhost:${Number(port) + 1}`)).toBe(403);
    expect(await withHost('rebound.example')).toBe(403);
    expect(await withHost(`rebound.example:${port}`)).toBe(403);
    // DNS-rebinding protection: a page of another origin is refused.
    const rebound = await post({ authorization: `Bearer ${stack.tokens.agent}`, origin: 'http://evil.example' });
    expect(rebound.status).toBe(403);
    const described = (await (await fetch(metadata)).json()) as { resource: string; bearer_methods_supported: string[] };
    expect(described).toMatchObject({ resource: `${stack.edgeUrl}/mcp`, bearer_methods_supported: ['header'] });
    // Stateless: no server stream to open.
    expect((await fetch(mcpUrl, { headers: { authorization: `Bearer ${stack.tokens.agent}` } })).status).toBe(405);
  });

  it('the MCP Inspector CLI lists the tools and claims a run', async ({ stack, site, owner }) => {
    const mcpUrl = mcpUrlOf(stack);
    const created = await owner.createRun({ profile_id: `inspector-${runtime}`, intent: 'Look at the draft', origins: [site.origin] });
    const common = ['--cli', mcpUrl.href, '--transport', 'http', '--header', `Authorization: Bearer ${stack.tokens.agent}`];
    const listed = await run(process.execPath, [INSPECTOR, ...common, '--method', 'tools/list'], { timeout: 60_000, cwd: INSPECTOR_CWD });
    expect(JSON.parse(listed.stdout).tools.map((tool: { name: string }) => tool.name)).toContain('run_claim');
    const claimed = await run(
      process.execPath,
      [INSPECTOR, ...common, '--method', 'tools/call', '--tool-name', 'run_claim', '--tool-arg', `run_id=${created.id}`],
      { timeout: 60_000, cwd: INSPECTOR_CWD },
    );
    expect(JSON.parse(claimed.stdout).structuredContent).toMatchObject({ id: created.id, state: 'running' });
  });
});
