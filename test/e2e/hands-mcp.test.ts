import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { ToolCallView } from '../../shared/api.ts';
import type { Observation } from '../../shared/observation.ts';
import { approvalsAsked, pendingApprovalOf } from '../support/hands.ts';
import { stackTest } from '../support/stack-fixture.ts';

// Issue 33's hands over MCP (the official TypeScript client over Streamable HTTP) against the real
// edge (wrangler dev) and host (Chromium): the same governed pipeline as the HTTP API, with the
// new act kinds in browser_act and a screenshot as an image content block of browser_observe.

const it = stackTest({ headless: true });

type Block = { type: string; text?: string; data?: string; mimeType?: string };

/** An official MCP client of the stack's endpoint, as the agent. */
async function connect(stack: LocalStack): Promise<Client> {
  const client = new Client({ name: 'e2e-hands', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', stack.edgeUrl), { requestInit: { headers: { Authorization: `Bearer ${stack.tokens.agent}` } } }),
  );
  return client;
}

const blocksOf = (result: object): Block[] => (result as { content?: Block[] }).content ?? [];
const textOf = (result: object): string =>
  blocksOf(result)
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
const callOf = (result: object): ToolCallView => ToolCallView.parse((result as { structuredContent?: unknown }).structuredContent);
const observationIn = (result: object): Observation => callOf(result).result as Observation;

describe('issue 33 over MCP', () => {
  it('browser_act lists the new kinds, browser_observe a screenshot and browser_navigate history moves, in schemas from the contracts', async ({ stack }) => {
    const client = await connect(stack);
    try {
      const { tools } = await client.listTools();
      const schema = (name: string) => JSON.stringify(tools.find((tool) => tool.name === name)?.inputSchema);
      for (const kind of ['"hover"', '"drag"', '"fill_form"', '"upload"', '"point"', '"to_point"', '"submit_reference"', '"file_id"']) {
        expect(schema('browser_act'), kind).toContain(kind);
      }
      expect(schema('browser_observe')).toContain('"screenshot"');
      expect(schema('browser_navigate')).toContain('"history"');
    } finally {
      await client.close();
    }
  });

  it('a hover runs at once under the default profile; the menu opens', async ({ stack, site, agent, owner }) => {
    const client = await connect(stack);
    const run = await owner.createRun({ profile_id: 'mcp-hover', intent: 'open the account menu', origins: [site.origin] });
    try {
      await client.callTool({ name: 'run_claim', arguments: { run_id: run.id } });
      const page = observationIn(await client.callTool({ name: 'browser_navigate', arguments: { run_id: run.id, url: site.url('e2e-hands/menu.html') } }));
      const hovered = await client.callTool({
        name: 'browser_act',
        arguments: {
          run_id: run.id,
          action: 'hover',
          revision: page.revision,
          reference: refOf(page.snapshot, 'button', 'Account'),
          postcondition: { success: { kind: 'control', role: 'button', name: 'Account', expanded: true } },
        },
      });
      expect(hovered.isError).toBeFalsy();
      expect(callOf(hovered)).toMatchObject({ state: 'succeeded', approval_id: null });
      expect(textOf(hovered)).toContain('condition: satisfied');
      expect(textOf(hovered)).toContain('menuitem "Orders"');
      expect(await approvalsAsked(owner, run.id)).toBe(0);
    } finally {
      await client.close();
      await agent.report(run.id, 'completed', 'hovered').catch(() => undefined);
    }
  });

  it('browser_act fill_form parks once for the owner, who approves every field at once; call_status gives the postcondition', async ({
    stack,
    site,
    agent,
    owner,
  }) => {
    const client = await connect(stack);
    const run = await owner.createRun({ profile_id: 'mcp-fill', intent: 'sign me up as Grace Hopper', origins: [site.origin] });
    try {
      const submitted = site.hits('sign-up');
      await client.callTool({ name: 'run_claim', arguments: { run_id: run.id } });
      const page = observationIn(await client.callTool({ name: 'browser_navigate', arguments: { run_id: run.id, url: site.url('e2e-hands/sign-up.html') } }));
      const ref = (role: string, name: string) => refOf(page.snapshot, role, name);
      const parked = await client.callTool({
        name: 'browser_act',
        arguments: {
          run_id: run.id,
          action: 'fill_form',
          revision: page.revision,
          fields: [
            { reference: ref('textbox', 'First name'), value: 'Grace' },
            { reference: ref('textbox', 'Last name'), value: 'Hopper' },
            { reference: ref('textbox', 'Email'), value: 'grace@example.test' },
            { reference: ref('combobox', 'Country'), value: 'Japan' },
            { reference: ref('checkbox', 'I accept the terms'), value: true },
            { reference: ref('radio', 'Free'), value: true },
          ],
          submit_reference: ref('button', 'Create account'),
          postcondition: { success: { kind: 'text', text: 'Submitted: Grace Hopper, grace@example.test, jp, terms yes, plan free' } },
        },
      });
      const waiting = callOf(parked);
      expect(waiting.state).toBe('waiting_for_approval');
      const approval = await pendingApprovalOf(owner, waiting.id);
      for (const step of [
        'Type "Grace" into the textbox "First name"',
        'Select "Japan" in the combobox "Country"',
        'Check the radio "Free"',
        'Click the button "Create account"',
      ]) {
        expect(approval.summary).toContain(step);
      }
      await owner.decide(approval.id, 'approve');
      const finished = await client.callTool({ name: 'call_status', arguments: { call_id: waiting.id, wait_ms: 30_000 } });
      expect(callOf(finished).state).toBe('succeeded');
      expect(textOf(finished)).toContain('condition: satisfied');
      expect(await approvalsAsked(owner, run.id)).toBe(1);
      expect(site.hits('sign-up')).toBe(submitted + 1);
    } finally {
      await client.close();
      await agent.report(run.id, 'completed', 'signed up').catch(() => undefined);
    }
  });

  it('browser_observe with screenshot answers an image content block: the JPEG of the observation', async ({ stack, site, agent, owner }) => {
    const client = await connect(stack);
    const run = await owner.createRun({ profile_id: 'mcp-picture', intent: 'look at my pinboard', origins: [site.origin] });
    try {
      await client.callTool({ name: 'run_claim', arguments: { run_id: run.id } });
      await client.callTool({ name: 'browser_navigate', arguments: { run_id: run.id, url: site.url('e2e-hands/pinboard.html') } });
      const observed = await client.callTool({ name: 'browser_observe', arguments: { run_id: run.id, screenshot: true } });
      expect(observed.isError).toBeFalsy();
      const images = blocksOf(observed).filter((block) => block.type === 'image');
      expect(images).toHaveLength(1);
      expect(images[0]?.mimeType).toBe('image/jpeg');
      const jpeg = Buffer.from(images[0]!.data!, 'base64');
      expect(jpeg.subarray(0, 3).toString('hex')).toBe('ffd8ff');
      const screenshot = observationIn(observed).screenshot;
      expect(screenshot?.bytes).toBe(jpeg.length);
      expect(textOf(observed)).toContain('button "Pin note"');
      // Without screenshot, no picture.
      const plain = await client.callTool({ name: 'browser_observe', arguments: { run_id: run.id } });
      expect(blocksOf(plain).filter((block) => block.type === 'image')).toEqual([]);
    } finally {
      await client.close();
      await agent.report(run.id, 'completed', 'looked').catch(() => undefined);
    }
  });
});
