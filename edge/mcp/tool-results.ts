import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { RunView, ToolCallView } from '../../shared/api.ts';
import { base64OfBytes } from '../artifacts/bytes.ts';
import { runArtifact } from '../artifacts/run-artifacts.ts';
import type { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';

/** Where the owner answers: the console's inbox (approvals) and Sign-ins (the live view), absolute when the edge knows its public URL. */
export interface ConsoleLinks {
  readonly inbox: string;
  readonly signIns: string;
}

/** The console links under `base` (the edge's public URL, or the request's origin). */
export function consoleLinks(base: string): ConsoleLinks {
  const root = base.replace(/\/+$/, '');
  return { inbox: `${root}/console`, signIns: `${root}/console/sign-ins` };
}

/**
 * The MCP result of a finished or parked call (issue 18): `structuredContent` is the HTTP API's
 * call view (the tools' `outputSchema`), and one text block says what a model needs to go on: the
 * state, the page (URL, title, revision), the settle and condition lines, the window, and the
 * aria snapshot; for a call that waits, who it waits for and where the owner answers. A call that
 * ended `failed`, `uncertain`, `denied`, `rejected` or `cancelled` is `isError`, with its code.
 */
export function callResult(call: ToolCallView, run: RunView | undefined, links: ConsoleLinks): CallToolResult {
  const lines = [`call ${call.id} (${call.tool} ${call.version}): ${call.state}`];
  if (call.state === 'waiting_for_approval') {
    lines.push(
      `The owner is asked to approve it (approval ${call.approval_id ?? 'pending'}); they decide in the console: ${links.inbox}`,
      `Poll call_status {"call_id": "${call.id}", "wait_ms": 30000} until it finishes. Do not propose it again.`,
    );
  }
  if (call.error !== null) lines.push(`error ${call.error.code}: ${call.error.message}`);
  if (run?.state === 'waiting_for_authentication') {
    lines.push(
      `The run waits for the owner to sign in to ${run.authentication?.origin ?? 'the site'}; they do it from the console's Sign-ins (live view): ${links.signIns}`,
      'The run is queued again once the sign-in is verified: call run_claim, then observe before you act.',
    );
  }
  const result = call.result;
  if (result !== null && 'omitted' in result) {
    lines.push(`page revision ${result.revision}: the observation (${result.size_bytes} bytes) did not fit the result budget of ${result.budget_bytes} bytes`);
    if ('condition' in result && result.condition) lines.push(conditionLine(result.condition));
  } else if (result !== null) {
    lines.push(`page: ${result.url} "${result.title}" revision ${result.revision}`);
    if ('settle' in result) lines.push(`settle: ${result.settle.outcome} after ${result.settle.elapsed_ms} ms`);
    if ('condition' in result && result.condition) lines.push(conditionLine(result.condition));
    const { scope } = result.window;
    lines.push(
      `window: snapshot lines ${scope.start_node}-${scope.end_node} of ${scope.total_nodes}${result.window.continuation ? `; more with browser_observe {"continuation": "${result.window.continuation}"}` : ''}`,
    );
    lines.push('', result.snapshot);
  }
  const failed = ['failed', 'uncertain', 'denied', 'rejected', 'cancelled'].includes(call.state);
  return {
    content: [{ type: 'text', text: lines.join('\n') }],
    structuredContent: call as unknown as Record<string, unknown>,
    ...(failed ? { isError: true } : {}),
  };
}

/**
 * `result` with the call's observation screenshot (1.5.0 `browser_observe {screenshot: true}`) as
 * an image content block after the text, `{type: 'image', data: <base64 JPEG>, mimeType:
 * 'image/jpeg'}`, read from the run's artifacts; `result` unchanged when the observation carries
 * none or the picture is gone (retention). Like the snapshot, it is page content.
 */
export async function withScreenshotBlock(ports: Ports, result: CallToolResult, call: ToolCallView): Promise<CallToolResult> {
  const observation = call.result;
  if (observation === null || !('screenshot' in observation) || observation.screenshot === undefined) return result;
  const picture = await runArtifact(ports, call.run_id, observation.screenshot.artifact_id);
  if (picture === undefined) return result;
  return { ...result, content: [...result.content, { type: 'image', data: base64OfBytes(picture.bytes), mimeType: observation.screenshot.mime_type }] };
}

function conditionLine(condition: { status: string; observations: number; elapsed_ms: number }): string {
  return `condition: ${condition.status} (${condition.observations} observations, ${condition.elapsed_ms} ms)`;
}

/**
 * The MCP result of a run tool (`run_claim`, `run_report`): the run view and its gist in words,
 * then `notes` (lines, e.g. what became of the memories a report proposed). With `anticipation`
 * (the claim, issue 34), the text also lists the run's verified anticipations as the owner's own
 * statements, one per line, or says why anticipation was off; refused predictions are never in a
 * run's view, so never shown to the agent.
 */
export function runResult(run: RunView, options: { readonly anticipation?: boolean; readonly notes?: readonly string[] } = {}): CallToolResult {
  const text = [
    `run ${run.id}: ${run.state}`,
    `intent: ${run.intent}`,
    `origins: ${run.origins.join(', ')}`,
    `deadline: ${run.deadline_at}`,
    ...(run.summary ? [`summary: ${run.summary}`] : []),
    ...(options.anticipation ? anticipationLines(run) : []),
    ...(options.notes ?? []),
  ].join('\n');
  return { content: [{ type: 'text', text }], structuredContent: run as unknown as Record<string, unknown> };
}

/** The run's anticipation in words: the owner's statements, or why there are none. */
function anticipationLines(run: RunView): string[] {
  if (run.anticipated.length > 0) {
    return ["The owner's own statements (from their memories):", ...run.anticipated.map((memory) => `- ${memory.statement}`)];
  }
  if (run.anticipation?.state === 'off') return [`anticipation off (${run.anticipation.reason ?? 'unknown'}): ${run.anticipation.message ?? ''}`.trimEnd()];
  return [];
}

/**
 * The MCP result of a refusal (bad arguments, a denial, a stale revision, a run not active):
 * `isError`, the stable code first in the text, and `{code, message, details}` under
 * `_meta["governed-browser/error"]`; no `structuredContent` (it would have to match the output schema).
 */
export function refusalResult(error: DomainError): CallToolResult {
  const details = error.details ? ` ${JSON.stringify(error.details)}` : '';
  return {
    content: [{ type: 'text', text: `${error.code}: ${error.message}${details}` }],
    isError: true,
    _meta: { 'governed-browser/error': { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) } },
  };
}
