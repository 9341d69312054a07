import type { z } from 'zod';
import { ApprovalList, ConsoleLinkView, DecisionResponse, NoticeList, RunView, ToolCallView } from '../shared/api.ts';
import { ErrorBody } from '../shared/errors.ts';
import type { Observation } from '../shared/observation.ts';

/**
 * A small HTTP client of the agent-facing API, used by the demo agent, the end-to-end tests and
 * the benchmark. It speaks only HTTP and parses every answer with the shared zod schemas, so a
 * drift between server and contract fails loudly.
 */
export class ApiClient {
  /** @param timeoutMs when given, how long one request (answer and body) may take, in ms, before it is aborted with a TimeoutError. */
  constructor(
    readonly baseUrl: string,
    readonly token: string,
    readonly timeoutMs?: number,
  ) {}

  /** Sends a request and returns status and parsed JSON body (unvalidated). */
  async raw(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { Authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(this.timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(this.timeoutMs) }),
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: response.status, body: parsed };
  }

  /**
   * Sends a request and parses a success answer with `schema`.
   * @throws ApiRequestError for any status not in `expect`, carrying the typed error body.
   */
  async request<T extends z.ZodType>(
    method: string,
    path: string,
    schema: T,
    body?: unknown,
    expect: number[] = [200, 201, 202],
  ): Promise<{ status: number; body: z.infer<T> }> {
    const answer = await this.raw(method, path, body);
    if (!expect.includes(answer.status)) {
      const error = ErrorBody.safeParse(answer.body);
      throw new ApiRequestError(
        answer.status,
        error.success ? error.data.error.code : 'unparsed',
        error.success ? error.data.error.message : JSON.stringify(answer.body),
      );
    }
    return { status: answer.status, body: schema.parse(answer.body) };
  }

  createRun(body: { profile_id: string; intent: string; origins: string[]; deadline_ms?: number; fields?: Record<string, string> }) {
    return this.request('POST', '/v1/runs', RunView, body).then((a) => a.body);
  }

  run(id: string) {
    return this.request('GET', `/v1/runs/${id}`, RunView).then((a) => a.body);
  }

  propose(runId: string, tool: string, args: Record<string, unknown>, version = '1.2.0') {
    return this.request('POST', `/v1/runs/${runId}/tool-calls`, ToolCallView, { tool, version, arguments: args });
  }

  toolCall(id: string, waitMs = 0) {
    return this.request('GET', `/v1/tool-calls/${id}?wait_ms=${waitMs}`, ToolCallView).then((a) => a.body);
  }

  pendingApprovals() {
    return this.request('GET', '/v1/approvals?state=pending', ApprovalList).then((a) => a.body.approvals);
  }

  decide(approvalId: string, decision: 'approve' | 'deny') {
    return this.request('POST', `/v1/approvals/${approvalId}/decision`, DecisionResponse, { decision }).then((a) => a.body);
  }

  /** The owner's notices about run `runId`, newest first. */
  async noticesFor(runId: string): Promise<NoticeList['notices']> {
    return (await this.request('GET', '/v1/notices', NoticeList)).body.notices.filter((notice) => notice.run_id === runId);
  }

  /**
   * Waits until the owner has at least `count` notices about run `runId`: a sign-in notice is sent
   * once the host has begun the episode's ceremony, which happens after the call that met the wall
   * answered. Polls every 250 ms.
   * @param timeoutMs how long to wait, in ms.
   * @throws Error when they have not arrived in time.
   */
  async waitForNotices(runId: string, count = 1, timeoutMs = 30_000): Promise<NoticeList['notices']> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const notices = await this.noticesFor(runId);
      if (notices.length >= count || Date.now() >= until) {
        if (notices.length < count) throw new Error(`run ${runId} has ${notices.length} owner notice(s) after ${timeoutMs} ms, not ${count}`);
        return notices;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /**
   * A one-time sign-in link to the owner console for owner `ownerId` (valid 15 minutes, once);
   * this client's token must be an operator's.
   * @throws ApiRequestError for a refusal (`forbidden` for another principal, `not_found` for no such owner).
   */
  consoleLink(ownerId: string) {
    return this.request('POST', '/console/links', ConsoleLinkView, { owner_id: ownerId }, [201]).then((a) => a.body);
  }

  report(runId: string, status: 'completed' | 'partial' | 'uncertain' | 'failed', summary: string) {
    return this.request('POST', `/v1/runs/${runId}/report`, RunView, { status, summary }).then((a) => a.body);
  }
}

/**
 * The observation a finished call returned.
 * @throws Error when the call did not succeed, its observation was omitted for size, or it is in
 *   the 1.1.0 shape.
 */
export function observationOf(call: ToolCallView): Observation {
  if (call.state !== 'succeeded' || !call.result) throw new Error(`${call.tool} ${call.id} did not succeed: ${call.state} ${JSON.stringify(call.error)}`);
  if ('omitted' in call.result) throw new Error(`${call.tool} ${call.id}: the observation was omitted (${call.result.size_bytes} bytes over the budget)`);
  if (!('settle' in call.result)) throw new Error(`${call.tool} ${call.id}: a 1.1.0 result; this client reads 1.2.0 observations`);
  return call.result;
}

/** A non-success answer of the API, with its stable error code. */
export class ApiRequestError extends Error {
  override readonly name = 'ApiRequestError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`${status} ${code}: ${message}`);
  }
}
