import { z } from 'zod';
import { type ApiClient, observationOf } from '../../scripts/api-client.ts';
import { type ApprovalView, type RunView, ToolCallView } from '../../shared/api.ts';
import { ErrorBody } from '../../shared/errors.ts';
import type { Observation } from '../../shared/observation.ts';
import { RunArtifactView, RunFileView } from '../../shared/run-files.ts';

/**
 * What the end-to-end tests of issue 33's acts (hover, drag, fill_form, upload, points, history,
 * screenshots, downloads) share: proposals pinned to tool version 1.5.0 over the HTTP API, the
 * owner's approvals, and the run's files and artifacts.
 */

/** The tool version every call of these tests is pinned to. */
export const HANDS_VERSION = '1.5.0';

/** The agent and the owner of a stack (test/support/stack-fixture.ts). */
export interface Parties {
  readonly agent: ApiClient;
  readonly owner: ApiClient;
}

/** An act as it ended: the finished call, and the one approval the owner was asked (absent when none was). */
export interface Acted {
  readonly call: ToolCallView;
  readonly approval?: ApprovalView;
}

/**
 * Navigates run `runId` to `url` at 1.5.0; the observation.
 * @throws Error when the navigation did not succeed.
 */
export async function openPage(agent: ApiClient, runId: string, url: string): Promise<Observation> {
  return observationOf((await agent.propose(runId, 'browser.navigate', { url }, HANDS_VERSION)).body);
}

/** Observes run `runId` at 1.5.0 with `args` (e.g. `{screenshot: true}`); the observation. */
export async function observePage(agent: ApiClient, runId: string, args: Record<string, unknown> = {}): Promise<Observation> {
  return observationOf((await agent.propose(runId, 'browser.observe', args, HANDS_VERSION)).body);
}

/**
 * Proposes a `browser.act` at 1.5.0 and, when it parks, has the owner approve it: the pending
 * approval of that call is read from `GET /v1/approvals` (exactly one must exist) and approved.
 * @returns the finished call and the approval the owner was shown (none when policy allowed the act outright).
 */
export async function actApproved({ agent, owner }: Parties, runId: string, args: Record<string, unknown>): Promise<Acted> {
  const proposal = await agent.propose(runId, 'browser.act', args, HANDS_VERSION);
  if (proposal.status !== 202) return { call: proposal.body };
  const approval = await pendingApprovalOf(owner, proposal.body.id);
  return { call: (await owner.decide(approval.id, 'approve')).tool_call, approval };
}

/**
 * The one pending approval of call `callId`.
 * @throws Error when there is not exactly one.
 */
export async function pendingApprovalOf(owner: ApiClient, callId: string): Promise<ApprovalView> {
  const pending = (await owner.pendingApprovals()).filter((approval) => approval.tool_call_id === callId);
  if (pending.length !== 1) throw new Error(`call ${callId} has ${pending.length} pending approvals, not one`);
  return pending[0]!;
}

/** How many approvals the owner has been asked for on run `runId`, whatever their state. */
export async function approvalsAsked(owner: ApiClient, runId: string): Promise<number> {
  const all = await owner.request('GET', '/v1/approvals', z.object({ approvals: z.array(z.object({ run_id: z.string() })) }));
  return all.body.approvals.filter((approval) => approval.run_id === runId).length;
}

/**
 * A proposal the edge refused: its HTTP status, error code and message, or, for a proposal the edge took
 * (200/202), the call's state and its error code (a call that failed on the host).
 */
export async function proposalOutcome(
  agent: ApiClient,
  runId: string,
  tool: string,
  args: Record<string, unknown>,
): Promise<{ status: number; code: string | undefined; message?: string; call?: ToolCallView }> {
  const answer = await agent.raw('POST', `/v1/runs/${runId}/tool-calls`, { tool, version: HANDS_VERSION, arguments: args });
  const refused = ErrorBody.safeParse(answer.body);
  if (refused.success) return { status: answer.status, code: refused.data.error.code, message: refused.data.error.message };
  const call = ToolCallView.parse(answer.body);
  return { status: answer.status, code: call.error?.code, call };
}

/** A file as the owner attaches it: its name, media type and bytes. */
export interface AttachedFile {
  readonly name: string;
  readonly mime_type: string;
  readonly bytes: Buffer;
}

/** The owner attaches `file` to run `runId` (`POST /v1/runs/{id}/files`); the file as the edge keeps it. */
export async function attachFile(owner: ApiClient, runId: string, file: AttachedFile): Promise<RunFileView> {
  const body = { name: file.name, mime_type: file.mime_type, data_base64: file.bytes.toString('base64') };
  return (await owner.request('POST', `/v1/runs/${runId}/files`, RunFileView, body, [201])).body;
}

/** The artifacts of run `runId` (`GET /v1/runs/{id}/artifacts`), read with `client`. */
export async function runArtifacts(client: ApiClient, runId: string): Promise<RunArtifactView[]> {
  return (await client.request('GET', `/v1/runs/${runId}/artifacts`, z.strictObject({ artifacts: z.array(RunArtifactView) }))).body.artifacts;
}

/** The bytes of artifact `artifactId` of run `runId` and their media type, read with `client`. */
export async function artifactBytes(client: ApiClient, runId: string, artifactId: string): Promise<{ type: string | null; bytes: Buffer }> {
  const response = await fetch(`${client.baseUrl}/v1/runs/${runId}/artifacts/${artifactId}`, { headers: { Authorization: `Bearer ${client.token}` } });
  if (!response.ok) throw new Error(`artifact ${artifactId} of ${runId}: ${response.status} ${await response.text()}`);
  return { type: response.headers.get('content-type'), bytes: Buffer.from(await response.arrayBuffer()) };
}

/** Reports run `run` finished (releasing its browser), ignoring a run that already ended. */
export async function finish(agent: ApiClient, run: Pick<RunView, 'id'>, summary = 'done'): Promise<void> {
  await agent.report(run.id, 'completed', summary).catch(() => undefined);
}
