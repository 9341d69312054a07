import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolCallView } from '../shared/api.ts';
import { ApiClient } from './api-client.ts';
import { refOf } from './aria-refs.ts';
import type { LocalStack } from './local-stack.ts';

/** What the MCP part of the demo did: the tools it saw, the run, and the state of each call. */
export interface McpJourney {
  readonly tools: readonly string[];
  readonly runId: string;
  readonly calls: ReadonlyArray<{ readonly tool: string; readonly state: string }>;
  readonly finalState: string;
}

/**
 * A short agent journey over MCP (issue 18), as an agent developer's client would run it: the
 * official TypeScript client SDK over Streamable HTTP to `<edge>/mcp` with the agent's token. The
 * owner creates a run on TodoMVC; the agent lists the tools, claims the run, opens the app,
 * types a todo (which waits for the owner: the scripted owner approves it through the API) and
 * learns the outcome from `call_status`, then reports. `say` gets one line per step.
 * @throws Error when a step does not end as a governed agent expects.
 */
export async function runMcpJourney(
  stack: Pick<LocalStack, 'edgeUrl' | 'todoUrl' | 'tokens'>,
  say: (line: string) => void,
  todo = 'Water the plants',
): Promise<McpJourney> {
  const owner = new ApiClient(stack.edgeUrl, stack.tokens.owner);
  const todoOrigin = new URL(stack.todoUrl).origin;
  const run = await owner.createRun({ profile_id: 'demo-mcp', intent: `Add "${todo}" to my todo list`, origins: [todoOrigin], deadline_ms: 180_000 });
  const client = new Client({ name: 'demo-agent', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', stack.edgeUrl), { requestInit: { headers: { Authorization: `Bearer ${stack.tokens.agent}` } } }),
  );
  const calls: Array<{ tool: string; state: string }> = [];
  const firstLine = (result: object) => ((result as { content?: { text?: string }[] }).content?.[0]?.text ?? '').split('\n')[0] ?? '';
  try {
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    say(`tools/list: ${tools.join(', ')}`);
    const claimed = await client.callTool({ name: 'run_claim', arguments: { run_id: run.id } });
    say(`run_claim → ${firstLine(claimed)}`);
    const call = async (name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: { run_id: run.id, ...args } });
      if (result.isError && result.structuredContent === undefined) throw new Error(`${name}: ${firstLine(result)}`);
      const view = ToolCallView.parse(result.structuredContent);
      calls.push({ tool: name, state: view.state });
      const rule = view.phases.decision?.rule;
      say(`${name} → ${firstLine(result)}${rule ? ` · rule ${rule}` : ''}`);
      return view;
    };
    await call('browser_navigate', { url: stack.todoUrl });
    const seen = await call('browser_observe', {});
    const page = seen.result as { revision: number; snapshot: string };
    say(`typing "${todo}" with Enter into "What needs to be done?", with the postcondition that the text shows`);
    const typed = await call('browser_act', {
      action: 'type',
      revision: page.revision,
      reference: refOf(page.snapshot, 'textbox', 'What needs to be done?'),
      text: todo,
      submit: true,
      postcondition: { success: { kind: 'text', text: todo } },
    });
    if (typed.state !== 'waiting_for_approval' || typed.approval_id === null) throw new Error(`the typed todo did not wait for the owner: ${typed.state}`);
    say(`the call waits for the owner (approval ${typed.approval_id}); the scripted owner approves it through the API (it could be the console's inbox)`);
    await owner.decide(typed.approval_id, 'approve');
    const finished = ToolCallView.parse((await client.callTool({ name: 'call_status', arguments: { call_id: typed.id, wait_ms: 30_000 } })).structuredContent);
    calls.push({ tool: 'call_status', state: finished.state });
    const condition = (finished.result as { condition?: { status: string } } | null)?.condition?.status ?? 'none';
    say(`call_status → ${finished.state}, postcondition ${condition}`);
    if (finished.state !== 'succeeded' || condition !== 'satisfied')
      throw new Error(`the approved todo ended ${finished.state} with postcondition ${condition}`);
    const reported = await client.callTool({ name: 'run_report', arguments: { run_id: run.id, status: 'completed', summary: `Added "${todo}" over MCP.` } });
    say(`run_report → ${firstLine(reported)}`);
    return { tools, runId: run.id, calls, finalState: (reported.structuredContent as { state: string }).state };
  } finally {
    await client.close();
  }
}
