import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import type { z } from 'zod';
import { type HelloFrame, HOST_METHODS, type HostMethod, MAX_FRAME_BYTES, RequestFrame, type ResponseFrame } from '../shared/protocol.ts';
import { newWireNonce, signHostHello, splitRequestFrame, verifyFrameToken, WIRE_NONCE_PATTERN, wireDigest } from '../shared/wire-auth.ts';
import { toErrorDetail } from './host-error.ts';
import type { MethodHandlers } from './methods.ts';
import { withPhaseClock } from './phase-clock.ts';
import type { WireConnection } from './wire-connection.ts';

/** Where and as whom the wire server listens, and what it serves. */
export interface WireServerOptions {
  readonly bind: string;
  /** 0 picks any free port. */
  readonly port: number;
  readonly sharedSecret: string;
  readonly hostId: string;
  readonly handlers: MethodHandlers;
  /** Whether answers carry their phase timings (`HOST_PHASE_TIMINGS=1`, see `HostConfig.phaseTimings`). */
  readonly phaseTimings?: boolean;
}

/** Most bytes a connection may have queued unsent before notifications on it are held back. */
export const MAX_BUFFERED_NOTIFICATION_BYTES = 1024 * 1024;

/** A listening wire server. */
export interface WireServer {
  /** The port actually bound. */
  readonly port: number;
  /** Stops listening and closes every connection (in-flight answers are dropped). */
  close(): Promise<void>;
}

/** Most authenticated connections open at once from one peer address; more upgrades are refused (429). */
export const MAX_CONNECTIONS_PER_PEER = 64;
/**
 * Most connections from one peer address that have not yet sent an authenticated frame. A new
 * upgrade past it closes the oldest of them that has waited at least {@link PENDING_EVICTABLE_MS}
 * (the edge authenticates within milliseconds of the hello), so idle connections from a process
 * without the secret on the same address can never lock the edge out; when none is that old the
 * upgrade is refused (429).
 */
export const MAX_PENDING_PER_PEER = 16;
/** How long a connection must have authenticated nothing before a new one may take its place, in ms. */
export const PENDING_EVICTABLE_MS = 1_000;
/** Most connections open at once in all; past it the oldest unauthenticated one is closed, or the upgrade refused (503). */
export const MAX_CONNECTIONS = 256;
/**
 * Most bytes a connection may send before its first authenticated frame, and most bytes of
 * refused frames after it; past either the connection is cut (unauthenticated input is bounded
 * long before a 4 MiB frame is read whole).
 */
export const MAX_UNAUTHENTICATED_BYTES = 64 * 1024;
/** How long a connection may stay without an authenticated frame, in ms; then it is closed. */
export const AUTHENTICATION_TIMEOUT_MS = 10_000;

/**
 * Starts the edge-facing WebSocket server (shared/protocol.ts, shared/wire-auth.ts). An upgrade
 * is refused: with 403 when it carries an `Origin` header (what browsers send, never the edge);
 * 400 without a well-formed `nonce`; 429 past {@link MAX_CONNECTIONS_PER_PEER} authenticated
 * connections from its address, or past {@link MAX_PENDING_PER_PEER} connections still setting
 * up when none of them is old enough to close for it; 503 past {@link MAX_CONNECTIONS} likewise
 * (the oldest idle unauthenticated connection is closed to make room whenever there is one). On every connection it first sends the hello
 * frame `{method: 'host.hello', params: {host_id, auth}}`, `auth` signing the edge's nonce, the
 * host id and a fresh connection id. Then, for every request frame `<token>\n<body>`,
 * concurrently:
 * - no token part, a token that is not a current frame token for this connection, a body whose
 *   digest is not the token's, a token already used on this connection (replay), or a body whose
 *   id or method is not the token's: `{id: <the token's frame id, else null>, error:
 *   unauthorized_frame}`; the body is not parsed before its token and digest check out;
 * - a body that is not a JSON request object: `invalid_params`;
 * - a method outside `HOST_METHODS`: `unknown_method`;
 * - params failing the method's schema: `invalid_params`, naming the offending fields;
 * - otherwise the handler's result, checked against the method's result schema (`internal_error`
 *   if it does not conform), with the phases it went through when `phaseTimings` is on
 *   (`timings`, see `PhaseClock`), or its error as `{code, message}`.
 * The connection stays open after any of these, except that unauthenticated input is bounded
 * ({@link MAX_UNAUTHENTICATED_BYTES}, {@link AUTHENTICATION_TIMEOUT_MS}). Frames over
 * `MAX_FRAME_BYTES` (4 MiB) are refused by the WebSocket layer, which closes that connection
 * (1009). There is no raw-CDP or script method.
 * @throws Error when the port cannot be bound.
 */
export async function startWireServer(options: WireServerOptions): Promise<WireServer> {
  const connections = new ConnectionTable();
  const server = new WebSocketServer({
    host: options.bind,
    port: options.port,
    maxPayload: MAX_FRAME_BYTES,
    verifyClient: (info, accept) => {
      const refuse = (status: number, why: string) => {
        // The operator's log says who was refused and why; the peer learns only the status.
        process.stderr.write(`browser-host: refused a WebSocket upgrade from ${peerOf(info.req)}: ${why}\n`);
        accept(false, status, why);
      };
      // The edge sends no Origin; a browser page always does (a page in the host's own Chromium,
      // or any page a person opens): such an upgrade is refused before a hello token is issued.
      if (info.origin) return refuse(403, 'browser pages may not connect');
      if (nonceOf(info.req) === undefined) return refuse(400, 'a nonce is required');
      const peer = peerOf(info.req);
      if (connections.authenticatedFrom(peer) >= MAX_CONNECTIONS_PER_PEER) return refuse(429, 'too many connections from this address');
      // Room is made by closing the oldest connections that have authenticated nothing.
      if (connections.pendingFrom(peer) >= MAX_PENDING_PER_PEER && !connections.evictOldestPending(peer)) {
        return refuse(429, 'too many connections being set up from this address');
      }
      if (connections.size >= MAX_CONNECTIONS && !connections.evictOldestPending()) return refuse(503, 'too many connections');
      accept(true);
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  server.on('connection', (socket, request) => serveConnection(socket, request, options, connections));
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

/** The edge's nonce from the upgrade URL's `nonce` parameter, when well-formed. */
function nonceOf(request: IncomingMessage): string | undefined {
  const nonce = new URL(request.url ?? '/', 'http://host.invalid').searchParams.get('nonce');
  return nonce !== null && WIRE_NONCE_PATTERN.test(nonce) ? nonce : undefined;
}

function peerOf(request: IncomingMessage): string {
  return request.socket.remoteAddress ?? 'unknown';
}

/** What one connection knows of its own authentication. */
interface ConnectionAuth {
  readonly connectionId: string;
  readonly peer: string;
  readonly socket: WebSocket;
  /** Epoch ms the connection opened. */
  readonly openedAt: number;
  /** Frame token ids seen on this connection, with their epoch-second expiry (replays are refused). */
  readonly seen: Map<string, number>;
  authenticated: boolean;
  /** Bytes counted against {@link MAX_UNAUTHENTICATED_BYTES}. */
  unauthenticatedBytes: number;
}

/** The open connections, in the order they opened, by whether they have authenticated yet. */
class ConnectionTable {
  readonly #open = new Set<ConnectionAuth>();

  get size(): number {
    return this.#open.size;
  }

  add(connection: ConnectionAuth): void {
    this.#open.add(connection);
  }

  remove(connection: ConnectionAuth): void {
    this.#open.delete(connection);
  }

  authenticatedFrom(peer: string): number {
    let count = 0;
    for (const connection of this.#open) if (connection.peer === peer && connection.authenticated) count++;
    return count;
  }

  pendingFrom(peer: string): number {
    let count = 0;
    for (const connection of this.#open) if (connection.peer === peer && !connection.authenticated) count++;
    return count;
  }

  /**
   * Closes the oldest connection (of `peer`, when given) that has authenticated nothing for at
   * least {@link PENDING_EVICTABLE_MS}; false when there is none.
   */
  evictOldestPending(peer?: string): boolean {
    const openedBefore = Date.now() - PENDING_EVICTABLE_MS;
    for (const connection of this.#open) {
      if (connection.authenticated || (peer !== undefined && connection.peer !== peer) || connection.openedAt > openedBefore) continue;
      this.#open.delete(connection);
      connection.socket.terminate();
      return true;
    }
    return false;
  }
}

function serveConnection(socket: WebSocket, request: IncomingMessage, options: WireServerOptions, connections: ConnectionTable): void {
  socket.on('error', () => {});
  const auth: ConnectionAuth = {
    connectionId: newWireNonce(),
    peer: peerOf(request),
    socket,
    openedAt: Date.now(),
    seen: new Map(),
    authenticated: false,
    unauthenticatedBytes: 0,
  };
  connections.add(auth);
  // Bytes before the first authenticated frame are counted as they arrive, so a peer without the
  // secret is cut off long before the WebSocket layer has read a 4 MiB frame.
  const countRaw = (chunk: Buffer) => {
    if (auth.authenticated) return;
    auth.unauthenticatedBytes += chunk.length;
    if (auth.unauthenticatedBytes > MAX_UNAUTHENTICATED_BYTES) socket.terminate();
  };
  request.socket.on('data', countRaw);
  const timer = setTimeout(() => {
    if (!auth.authenticated) socket.close(1008, 'no authenticated frame in time');
  }, AUTHENTICATION_TIMEOUT_MS);
  timer.unref();
  socket.once('close', () => {
    clearTimeout(timer);
    request.socket.off('data', countRaw);
    connections.remove(auth);
  });
  const connection: WireConnection = {
    notify: (notification) => {
      if (socket.readyState !== socket.OPEN || socket.bufferedAmount > MAX_BUFFERED_NOTIFICATION_BYTES) return false;
      socket.send(JSON.stringify(notification));
      return true;
    },
    get open() {
      return socket.readyState === socket.OPEN;
    },
    onClose: (listener) => {
      if (socket.readyState === socket.CLOSED || socket.readyState === socket.CLOSING) listener();
      else socket.once('close', listener);
    },
  };
  const nonce = nonceOf(request)!;
  const hello = (async () => {
    const frame: HelloFrame = {
      method: 'host.hello',
      params: { host_id: options.hostId, auth: await signHostHello(options.sharedSecret, { nonce, hostId: options.hostId, connectionId: auth.connectionId }) },
    };
    send(socket, frame);
  })();
  socket.on('message', (data: RawData) => {
    void (async () => {
      await hello;
      const text = rawText(data);
      const response = await answer(text, auth, options, connection);
      if ('error' in response && response.error.code === 'unauthorized_frame' && auth.authenticated) {
        auth.unauthenticatedBytes += text.length;
        if (auth.unauthenticatedBytes > MAX_UNAUTHENTICATED_BYTES) socket.close(1008, 'too many refused frames');
      }
      send(socket, response);
    })();
  });
}

/** The response to one raw frame; never throws. */
async function answer(
  text: string,
  auth: ConnectionAuth,
  options: Pick<WireServerOptions, 'sharedSecret' | 'handlers' | 'phaseTimings'>,
  connection: WireConnection,
): Promise<ResponseFrame> {
  // Authentication comes before the body is parsed: an unauthenticated peer learns nothing about
  // fields or methods, and costs no JSON parsing.
  const split = splitRequestFrame(text);
  const claims = split === undefined ? undefined : await verifyFrameToken(options.sharedSecret, split.token);
  const refuse = (why: string): ResponseFrame => ({
    id: claims?.frameId ?? null,
    error: { code: 'unauthorized_frame', message: `the frame carries no valid edge token: ${why}` },
  });
  if (split === undefined) return refuse('it has no token part');
  if (claims === undefined || claims.connectionId !== auth.connectionId) return refuse('not a current frame token for this connection');
  if (claims.bodyDigest !== (await wireDigest(split.body))) return refuse('the token is for another frame');
  if (auth.seen.has(claims.jti)) return refuse('the token was already used');
  rememberToken(auth, claims.jti, claims.exp);
  let raw: unknown;
  try {
    raw = JSON.parse(split.body);
  } catch {
    return { id: claims.frameId, error: { code: 'invalid_params', message: 'the frame is not JSON' } };
  }
  const frame = RequestFrame.safeParse(raw);
  if (!frame.success) return { id: claims.frameId, error: { code: 'invalid_params', message: `not a request frame: ${describe(frame.error)}` } };
  const { id, method, params } = frame.data;
  if (id !== claims.frameId || method !== claims.method) return refuse('the token is for another frame');
  auth.authenticated = true;
  if (!Object.hasOwn(HOST_METHODS, method)) {
    return { id, error: { code: 'unknown_method', message: `no method ${JSON.stringify(method.slice(0, 64))}` } };
  }
  const spec = HOST_METHODS[method as HostMethod];
  const parsed = spec.params.safeParse(params);
  if (!parsed.success) return { id, error: { code: 'invalid_params', message: `${method}: ${describe(parsed.error)}` } };
  try {
    const handler = options.handlers[method as HostMethod] as (params: unknown, connection: WireConnection) => Promise<unknown>;
    const { result: answer, clock } = options.phaseTimings
      ? await withPhaseClock(() => handler(parsed.data, connection))
      : { result: await handler(parsed.data, connection), clock: undefined };
    const result = spec.result.safeParse(answer);
    if (!result.success) return { id, error: { code: 'internal_error', message: `${method} produced an invalid result: ${describe(result.error)}` } };
    const timings = clock?.timings() ?? {};
    return Object.keys(timings).length > 0 ? { id, result: result.data, timings } : { id, result: result.data };
  } catch (error) {
    return { id, error: toErrorDetail(error) };
  }
}

/** Records a used token id until it expires; expired ones are dropped so the set stays bounded by the token lifetime. */
function rememberToken(auth: ConnectionAuth, jti: string, exp: number): void {
  const now = Date.now() / 1000;
  for (const [seen, expiry] of auth.seen) if (expiry + 10 < now) auth.seen.delete(seen);
  auth.seen.set(jti, exp);
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data as ArrayBuffer).toString('utf8');
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
