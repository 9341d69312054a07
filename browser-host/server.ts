import type { AddressInfo } from 'node:net';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import type { z } from 'zod';
import { type HelloFrame, HOST_METHODS, type HostMethod, MAX_FRAME_BYTES, RequestFrame, type ResponseFrame } from '../shared/protocol.ts';
import { signWireToken, verifyWireToken } from '../shared/wire-auth.ts';
import { toErrorDetail } from './host-error.ts';
import type { MethodHandlers } from './methods.ts';

/** Where and as whom the wire server listens, and what it serves. */
export interface WireServerOptions {
  readonly bind: string;
  /** 0 picks any free port. */
  readonly port: number;
  readonly sharedSecret: string;
  readonly hostId: string;
  readonly handlers: MethodHandlers;
}

/** A listening wire server. */
export interface WireServer {
  /** The port actually bound. */
  readonly port: number;
  /** Stops listening and closes every connection (in-flight answers are dropped). */
  close(): Promise<void>;
}

/**
 * Starts the edge-facing WebSocket server (shared/protocol.ts). An upgrade that carries an
 * `Origin` header (what browsers send, never the edge) is refused with 403. On every connection it first
 * sends the hello frame `{method: 'host.hello', params: {host_id, auth}}`, `auth` signed by the
 * host for the edge. Then, for every request frame `{id, method, params, auth}`, concurrently:
 * - not a JSON object: `{id: null, error: invalid_params}`;
 * - `auth` missing or not a valid edge-to-host wire token: `{id: <id if readable, else null>,
 *   error: unauthorized_frame}` (nothing else is looked at);
 * - not a request frame: `{id: <id if readable, else null>, error: invalid_params}`;
 * - a method outside `HOST_METHODS`: `unknown_method`;
 * - params failing the method's schema: `invalid_params`, naming the offending fields;
 * - otherwise the handler's result, checked against the method's result schema (`internal_error`
 *   if it does not conform), or its error as `{code, message}`.
 * The connection stays open after any of these. Frames over `MAX_FRAME_BYTES` (4 MiB) are refused
 * by the WebSocket layer, which closes that connection (1009). There is no raw-CDP or script method.
 * @throws Error when the port cannot be bound.
 */
export async function startWireServer(options: WireServerOptions): Promise<WireServer> {
  const server = new WebSocketServer({
    host: options.bind,
    port: options.port,
    maxPayload: MAX_FRAME_BYTES,
    // The edge sends no Origin; a browser page always does (a page in the host's own Chromium, or
    // any page a person opens): such an upgrade is refused before a hello token is issued.
    verifyClient: (info, accept) => (info.origin ? accept(false, 403, 'browser pages may not connect') : accept(true)),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  server.on('connection', (socket) => serveConnection(socket, options));
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    port,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      })),
  };
}

function serveConnection(socket: WebSocket, options: WireServerOptions): void {
  socket.on('error', () => {});
  const hello = (async () => {
    const frame: HelloFrame = {
      method: 'host.hello',
      params: { host_id: options.hostId, auth: await signWireToken(options.sharedSecret, 'browser-host', 'edge') },
    };
    send(socket, frame);
  })();
  socket.on('message', (data: RawData) => {
    void (async () => {
      await hello;
      send(socket, await answer(rawText(data), options));
    })();
  });
}

/** Longest `auth` token looked at, in characters (the RequestFrame bound). */
const MAX_AUTH_CHARS = 4096;

/** The response to one raw frame; never throws. */
async function answer(text: string, options: Pick<WireServerOptions, 'sharedSecret' | 'handlers'>): Promise<ResponseFrame> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { id: null, error: { code: 'invalid_params', message: 'the frame is not JSON' } };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { id: null, error: { code: 'invalid_params', message: 'the frame is not a JSON object' } };
  }
  // Authentication comes before the frame's shape: an unauthenticated peer learns nothing about
  // fields or methods.
  const auth = 'auth' in raw ? raw.auth : undefined;
  if (typeof auth !== 'string' || auth.length > MAX_AUTH_CHARS || !(await verifyWireToken(options.sharedSecret, auth, 'edge', 'browser-host'))) {
    return { id: readableId(raw), error: { code: 'unauthorized_frame', message: 'the frame carries no valid edge token' } };
  }
  const frame = RequestFrame.safeParse(raw);
  if (!frame.success) {
    return { id: readableId(raw), error: { code: 'invalid_params', message: `not a request frame: ${describe(frame.error)}` } };
  }
  const { id, method, params } = frame.data;
  if (!Object.hasOwn(HOST_METHODS, method)) {
    return { id, error: { code: 'unknown_method', message: `no method ${JSON.stringify(method.slice(0, 64))}` } };
  }
  const spec = HOST_METHODS[method as HostMethod];
  const parsed = spec.params.safeParse(params);
  if (!parsed.success) return { id, error: { code: 'invalid_params', message: `${method}: ${describe(parsed.error)}` } };
  try {
    const handler = options.handlers[method as HostMethod] as (params: unknown) => Promise<unknown>;
    const result = spec.result.safeParse(await handler(parsed.data));
    if (!result.success) return { id, error: { code: 'internal_error', message: `${method} produced an invalid result: ${describe(result.error)}` } };
    return { id, result: result.data };
  } catch (error) {
    return { id, error: toErrorDetail(error) };
  }
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data as ArrayBuffer).toString('utf8');
}

function readableId(raw: unknown): number | null {
  if (typeof raw !== 'object' || raw === null || !('id' in raw)) return null;
  const id = raw.id;
  return typeof id === 'number' && Number.isSafeInteger(id) && id >= 0 ? id : null;
}

/** `path: message; ...` for the first few issues, bounded. */
function describe(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(frame)'}: ${issue.message}`)
    .join('; ')
    .slice(0, 1_000);
}

function send(socket: WebSocket, frame: ResponseFrame | HelloFrame): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame));
}
