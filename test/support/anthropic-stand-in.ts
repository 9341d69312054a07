import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { AnticipationRequest, AnticipationResponse } from '../../shared/memories.ts';

/**
 * A local stand-in of the vendor's Messages API (`POST /v1/messages`), on 127.0.0.1, for the model
 * anticipation adapter (edge/memories/model-anticipator.ts). It checks each request as the real
 * API would need it for an anticipation (the key, the API version {@link ANTHROPIC_API_VERSION}, a model, the response schema
 * as structured output, one user message holding only the anticipation request), records it, and
 * answers as scripted: a message object with one text block, `usage` and `stop_reason`, or an
 * error in the vendor's error shape.
 */

/**
 * The API version @anthropic-ai/sdk 1.17.0 sends (`anthropic-version`). Under it the key travels
 * as `Authorization: Bearer <key>`; the stand-in also takes the older `x-api-key`.
 */
export const ANTHROPIC_API_VERSION = '2026-10-21';

/** The structured-output schema a request must carry: the SDK's JSON schema of {@link AnticipationResponse}. */
export const ANTICIPATION_RESPONSE_SCHEMA: Readonly<Record<string, unknown>> = zodOutputFormat(AnticipationResponse).schema;

/** Token counts an answer reports (`usage`). */
export interface StandInUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
}

/**
 * One scripted reply: an answer whose text block is `text` (JSON or not), with `usage` (default:
 * about four characters a token of the request and of the text) and `stop_reason` (default
 * `end_turn`); or an HTTP error `status` of the vendor's error `type`. `delayMs` holds the reply
 * back that long (a slow answer).
 */
export type StandInReply =
  | { readonly text: string; readonly usage?: StandInUsage; readonly stopReason?: string; readonly delayMs?: number }
  | { readonly status: number; readonly type: string; readonly message: string; readonly delayMs?: number };

/** Makes the reply to one valid request from its anticipation request. */
export type StandInResponder = (request: AnticipationRequest) => StandInReply;

/** One request the stand-in received. */
export interface RecordedRequest {
  /** Header names lowercased. */
  readonly headers: Readonly<Record<string, string>>;
  /** The JSON body (undefined when it was not JSON). */
  readonly body: unknown;
  /** The anticipation request the user message held, when it held a valid one. */
  readonly anticipation: AnticipationRequest | undefined;
  /** Why the request was refused with a 4xx, or undefined when it was valid. */
  readonly problem: string | undefined;
}

/** A running stand-in. */
export interface AnthropicStandIn {
  /** `http://127.0.0.1:<port>`: the SDK's `baseURL` (`ANTHROPIC_BASE_URL`). */
  readonly url: string;
  /** The key it accepts (`Authorization: Bearer <key>` or `x-api-key`). */
  readonly apiKey: string;
  /** Every request so far, in order. */
  readonly requests: readonly RecordedRequest[];
  /** Sets the responder for every valid request from now on (after any queued replies). */
  respondWith(responder: StandInResponder): void;
  /** Queues responders used once each, in order, before the standing one. */
  queue(...responders: StandInResponder[]): void;
  /** Forgets the requests so far and any queued replies, and answers with {@link copyStatements} again. */
  reset(): void;
  close(): Promise<void>;
}

/** A responder that copies, one prediction each, the statements of the memories `pick` chooses (default: all). */
export function copyStatements(pick: (memory: AnticipationRequest['memories'][number], intent: string) => boolean = () => true): StandInResponder {
  return (request) =>
    answer({ predictions: request.memories.filter((m) => pick(m, request.intent)).map((m) => ({ memory_id: m.id, statement: m.statement })) });
}

/** A responder whose one prediction joins the first two memories' statements, citing the first only (the verifier's `compound`). */
export function compoundOfFirstTwo(): StandInResponder {
  return (request) => {
    const [a, b] = request.memories;
    if (!a || !b) throw new Error('a compound needs two memories');
    return answer({ predictions: [{ memory_id: a.id, statement: `${a.statement} ${b.statement}` }] });
  };
}

/** A responder whose one prediction cites the first two memories at once (`memory_ids`, the schema's refusal). */
export function twoIdsOfFirstTwo(): StandInResponder {
  return (request) => {
    const [a, b] = request.memories;
    if (!a || !b) throw new Error('two ids need two memories');
    return answer({ predictions: [{ memory_id: [a.id, b.id], statement: `${a.statement} ${b.statement}` }] });
  };
}

/** A responder whose text is `text` as is (e.g. not JSON, or JSON without `predictions`). */
export function rawText(text: string): StandInResponder {
  return () => ({ text });
}

/** A responder answering the vendor's error `status` (500 `api_error`, 429 `rate_limit_error`, 529 `overloaded_error`, ...). */
export function failWith(status: number): StandInResponder {
  const type = status === 429 ? 'rate_limit_error' : status === 529 ? 'overloaded_error' : 'api_error';
  return () => ({ status, type, message: `stand-in ${status}` });
}

/** `responder`'s reply held back `delayMs`. */
export function slow(delayMs: number, responder: StandInResponder): StandInResponder {
  return (request) => ({ ...responder(request), delayMs });
}

/** A reply whose text is `value` as JSON. */
export function answer(value: unknown, usage?: StandInUsage): StandInReply {
  return usage ? { text: JSON.stringify(value), usage } : { text: JSON.stringify(value) };
}

/** Why a request body is not an anticipation request as the adapter must send it, or undefined. */
function problemOf(headers: Readonly<Record<string, string>>, body: unknown, apiKey: string): string | undefined {
  if (headers.authorization !== `Bearer ${apiKey}` && headers['x-api-key'] !== apiKey)
    return 'authentication_error: neither Authorization nor x-api-key holds the key';
  if (headers['anthropic-version'] !== ANTHROPIC_API_VERSION) return `anthropic-version is ${headers['anthropic-version']}, not ${ANTHROPIC_API_VERSION}`;
  if (typeof body !== 'object' || body === null) return 'the body is not a JSON object';
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || b.model === '') return 'model is missing';
  if (typeof b.max_tokens !== 'number' || !Number.isInteger(b.max_tokens) || b.max_tokens < 1) return 'max_tokens is not a positive integer';
  if (b.stream === true) return 'a stream was asked for';
  if (b.tools !== undefined) return 'tools were given';
  if (typeof b.system !== 'string' || b.system === '') return 'system is missing';
  const format = (b.output_config as { format?: { type?: unknown; schema?: unknown } } | undefined)?.format;
  if (format?.type !== 'json_schema') return 'output_config.format is not json_schema';
  if (!isDeepStrictEqual(format.schema, ANTICIPATION_RESPONSE_SCHEMA)) return "output_config.format.schema is not AnticipationResponse's";
  const messages = b.messages;
  if (!Array.isArray(messages) || messages.length !== 1) return 'messages is not exactly one message';
  const [message] = messages as { role?: unknown; content?: unknown }[];
  if (message?.role !== 'user' || typeof message.content !== 'string') return 'the message is not one user text';
  return undefined;
}

/** The anticipation request a valid body's user message holds, or undefined when it holds anything else. */
function anticipationOf(body: unknown): AnticipationRequest | undefined {
  try {
    const content = (body as { messages: { content: string }[] }).messages[0]?.content ?? '';
    const parsed = AnticipationRequest.safeParse(JSON.parse(content));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function sendError(response: ServerResponse, status: number, type: string, message: string): void {
  response
    .writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomUUID()}` })
    .end(JSON.stringify({ type: 'error', error: { type, message } }));
}

/**
 * Starts the stand-in on 127.0.0.1 (any free port). Until told otherwise it answers every valid
 * request with {@link copyStatements} of all memories. An invalid request is answered 400
 * `invalid_request_error` (401 `authentication_error` for a wrong key) and recorded with its problem.
 */
export async function startAnthropicStandIn(apiKey = 'sk-ant-stand-in-key'): Promise<AnthropicStandIn> {
  const requests: RecordedRequest[] = [];
  const queued: StandInResponder[] = [];
  let standing: StandInResponder = copyStatements();
  const server: Server = createServer(async (request, response) => {
    const text = await readBody(request);
    const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
    if (request.method !== 'POST' || request.url?.split('?')[0] !== '/v1/messages') {
      sendError(response, 404, 'not_found_error', `${request.method} ${request.url} is not the Messages API`);
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    let problem = problemOf(headers, body, apiKey);
    const anticipation = problem ? undefined : anticipationOf(body);
    if (!problem && !anticipation) problem = 'the user message is not an anticipation request (intent and memories only)';
    requests.push({ headers, body, anticipation, problem });
    if (problem || !anticipation) {
      const unauthenticated = problem?.startsWith('authentication_error') ?? false;
      sendError(response, unauthenticated ? 401 : 400, unauthenticated ? 'authentication_error' : 'invalid_request_error', problem ?? '');
      return;
    }
    let reply: StandInReply;
    try {
      reply = (queued.shift() ?? standing)(anticipation);
    } catch (error) {
      sendError(response, 500, 'api_error', `the stand-in's script failed: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if (response.destroyed) return;
    if ('status' in reply) {
      sendError(response, reply.status, reply.type, reply.message);
      return;
    }
    const usage = reply.usage ?? { input_tokens: Math.ceil(text.length / 4), output_tokens: Math.ceil(reply.text.length / 4) };
    response.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${randomUUID()}` }).end(
      JSON.stringify({
        id: `msg_${randomUUID().replaceAll('-', '')}`,
        type: 'message',
        role: 'assistant',
        model: (body as { model: string }).model,
        container: null,
        content: [{ type: 'text', text: reply.text, citations: null }],
        diagnostics: null,
        stop_details: null,
        stop_reason: reply.stopReason ?? 'end_turn',
        stop_sequence: null,
        usage: {
          ...usage,
          cache_creation: null,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          inference_geo: null,
          output_tokens_details: null,
          server_tool_use: null,
          service_tier: 'standard',
          speed: 'standard',
        },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    respondWith(responder) {
      standing = responder;
    },
    queue(...responders) {
      queued.push(...responders);
    },
    reset() {
      requests.length = 0;
      queued.length = 0;
      standing = copyStatements();
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
