import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect } from 'vitest';
import { startAccountSite } from '../../scripts/account-site.ts';
import { runRecipeJourney } from '../../scripts/recipe-journey.ts';
import { runSignInJourney } from '../../scripts/sign-in-journey.ts';
import { stackTestPerRuntime } from '../support/stack-fixture.ts';

// The demo's sign-in episode on the edge's other runtimes, over a SQLite file: the same waits,
// one-batch resolution and callback as on Workers. The host runs with the shipped, empty site
// catalog, so the sign-in is verified by the differential check for unknown sites. Then a reviewed
// recipe on the same site: the recipe runner is the same code in-process.

const RUNTIMES = ['node', 'deno'] as const;
const signInTest = stackTestPerRuntime(RUNTIMES, { site: startAccountSite, hostVars: { HOST_CEREMONY_POLL_MS: '500' } });

describe.each(RUNTIMES)('a sign-in episode, edge on %s', (runtime) => {
  const it = signInTest(runtime);

  it.beforeEach(({ stack, onTestFailed }) => {
    onTestFailed(() => console.error(`what the ${runtime} stack said last:\n${stack.recentOutput().slice(-120).join('\n')}`));
  });

  it('parks, is verified by differential loads after one native sign-in, resumes by itself and files the report once', async ({ stack, site, ownerId }) => {
    const record = await runSignInJourney(stack, site, ownerId, () => {});
    expect(record).toMatchObject({ reportsFiled: 1, notices: 1, approvals: 0, finalRun: { state: 'completed' } });
    expect(record.timeline.map((entry) => entry.what)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^ceremony_event: .*verified by differential verification, via callback, resolved the episode$/)]),
    );
    const [events] = await stack.queryD1('SELECT method, applied FROM ceremony_events');
    expect(events).toEqual([{ method: 'differential', applied: 1 }]);
  });

  it("runs a reviewed recipe in-process: the owner's exact phrase files the report once, with no agent", async ({ stack, site }) => {
    // The profile the sign-in episode above signed in.
    const record = await runRecipeJourney(stack, site, 'reports', () => {});
    expect(record).toMatchObject({ reportsFiled: 1, agentCalls: 0, approvals: 0, finalRun: { state: 'completed' } });
    expect(record.timeline.steps.map((step) => step.state)).toEqual(['done', 'done']);
  });

  it('serves the MCP endpoint too: the official client lists the tools and claims a run', async ({ stack, site, owner }) => {
    const created = await owner.createRun({ profile_id: `mcp-${runtime}`, intent: 'Look at the reports', origins: [site.origin] });
    const client = new Client({ name: 'e2e-agent', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', stack.edgeUrl), { requestInit: { headers: { Authorization: `Bearer ${stack.tokens.agent}` } } }),
    );
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('browser_act');
      const claimed = await client.callTool({ name: 'run_claim', arguments: { run_id: created.id } });
      expect(claimed.structuredContent).toMatchObject({ id: created.id, state: 'running' });
      await client.callTool({ name: 'run_report', arguments: { run_id: created.id, status: 'completed', summary: 'claimed over MCP' } });
    } finally {
      await client.close();
    }
  });
});
