import { z } from 'zod';
import type { RunView, ToolCallView } from '../../shared/api.ts';
import { CallStatusInput, MCP_TOOL_VERSION, MCP_TOOLS, RunClaimInput, RunReportInput } from '../../shared/mcp-tools.ts';
import type { Principal } from '../auth/principal.ts';
import { DomainError } from '../domain-error.ts';
import { placementOfRun } from '../fleet/placement.ts';
import { anticipationOfRun } from '../memories/anticipation-views.ts';
import { enterProposal } from '../pipeline/agent-entry.ts';
import { readToolCall } from '../pipeline/read-call.ts';
import { toolCallView } from '../pipeline/views.ts';
import type { Ports } from '../ports.ts';
import { claimRun } from '../runs/claim.ts';
import { loadRun, reportRun, suggestionNotes } from '../runs/lifecycle.ts';
import { runView } from '../runs/view.ts';
import { pendingWaitOf } from '../sign-in/owner-views.ts';

/**
 * What one MCP tool call did (issue 18): the view the HTTP API would have answered, or the
 * domain error it refused with. The MCP server turns it into a `CallToolResult`.
 */
export type McpToolOutcome =
  | { readonly kind: 'call'; readonly call: ToolCallView }
  | { readonly kind: 'run'; readonly run: RunView; readonly notes?: readonly string[] }
  | { readonly kind: 'refused'; readonly error: DomainError };

/**
 * Runs the MCP tool `name` with `args` for an agent principal, through the same services as the
 * HTTP API: `run_claim` claims (the named or the oldest queued run of the owner), the browser
 * tools propose `browser.*` at {@link MCP_TOOL_VERSION} on the run (validation, authority, policy,
 * approvals, grants, watermark, settle, postcondition, projection; counted against the proposal
 * rates like `POST /v1/runs/{id}/tool-calls`), `call_status` reads a call (waiting up to 30 s),
 * `run_report` reports. Refusals (bad arguments, denials, stale revisions, a run not active) come
 * back as `refused` with their stable code, never thrown.
 * @throws Error only for a tool name that is not one of {@link MCP_TOOLS} (the server checks first).
 */
export async function runMcpTool(ports: Ports, principal: Principal, name: string, args: Record<string, unknown>): Promise<McpToolOutcome> {
  try {
    const definition = MCP_TOOLS.find((tool) => tool.name === name);
    if (definition === undefined) throw new Error(`no MCP tool ${name}`);
    if (definition.tool !== undefined) {
      const { run_id: runId, ...toolArguments } = args;
      if (typeof runId !== 'string' || runId === '' || runId.length > 64)
        throw new DomainError('invalid_arguments', 'run_id: a run id from run_claim is required');
      // The HTTP API's entry: admission, the same envelope schema, then the pipeline.
      const outcome = await enterProposal(ports, principal, runId, { tool: definition.tool, version: MCP_TOOL_VERSION, arguments: toolArguments });
      return { kind: 'call', call: toolCallView(outcome.call, outcome.approvalId, ports.config.resultBudgetBytes) };
    }
    switch (name) {
      case 'run_claim': {
        const input = parsed(RunClaimInput, args);
        const run = await claimRun(ports, principal, input.run_id);
        return { kind: 'run', run: runView(run, await anticipationOfRun(ports, run.id)) };
      }
      case 'call_status': {
        const input = parsed(CallStatusInput, args);
        const { call, approvalId } = await readToolCall(ports, principal, input.call_id, input.wait_ms ?? 0);
        return { kind: 'call', call: toolCallView(call, approvalId, ports.config.resultBudgetBytes) };
      }
      case 'run_report': {
        const { run_id: runId, ...report } = parsed(RunReportInput, args);
        const reported = await reportRun(ports, principal, await loadRun(ports, principal, runId), report);
        return { kind: 'run', run: runView(reported.run, await anticipationOfRun(ports, reported.run.id)), notes: suggestionNotes(reported) };
      }
      default:
        throw new Error(`no MCP tool ${name}`);
    }
  } catch (error) {
    if (error instanceof DomainError) return { kind: 'refused', error };
    throw error;
  }
}

/** The run a call belongs to, as its owner's console shows it, for a call that waits on the owner. */
export async function runOfCall(ports: Ports, principal: Principal, call: ToolCallView): Promise<RunView | undefined> {
  try {
    const run = await loadRun(ports, principal, call.run_id);
    const wait = run.state === 'waiting_for_authentication' ? await pendingWaitOf(ports, run.id) : undefined;
    const [placement, shown] = await Promise.all([placementOfRun(ports, run), anticipationOfRun(ports, run.id)]);
    return runView(run, shown, wait, placement);
  } catch {
    return undefined;
  }
}

/** `args` as `schema` reads them. @throws DomainError('invalid_arguments') worded as the HTTP API words it. */
function parsed<T>(schema: z.ZodType<T>, args: unknown): T {
  const result = schema.safeParse(args);
  if (result.success) return result.data;
  throw new DomainError('invalid_arguments', z.prettifyError(result.error));
}
