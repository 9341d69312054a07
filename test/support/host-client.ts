import WebSocket from 'ws';
import type { ErrorDetail } from '../../shared/errors.ts';
import { LiveViewNotification } from '../../shared/live-view.ts';
import { HelloFrame, HOST_METHODS, type HostMethod, type HostParams, type HostResult, ResponseFrame } from '../../shared/protocol.ts';
import { newWireNonce, signRequestFrame, verifyHostHello, withWireNonce } from '../../shared/wire-auth.ts';

/** A wire call answered with an error; `detail` is the frame's `{code, message}`. */
export class WireCallError extends Error {
  readonly detail: ErrorDetail;

  constructor(method: string, detail: ErrorDetail) {
    super(`${method} failed: ${detail.code}: ${detail.message}`);
    this.detail = detail;
  }
}

/** How a raw request is signed: a valid edge token (default), a given string before the body, or no token part at all. */
export type FrameAuth = { kind: 'valid' } | { kind: 'token'; token: string } | { kind: 'omitted' };

/** The test side of the edge-host wire: an edge stand-in that signs frames like the edge. */
export interface HostClient {
  /** The host's hello frame, already verified. */
  readonly hello: HelloFrame;
  /** The connection id the hello named (frame tokens are bound to it). */
  readonly connectionId: string;
  /** The next frame id, signed as the edge would sign it (`<token>\n<body>`), without sending it. */
  signFrame(method: string, params: unknown): Promise<{ id: number; text: string }>;
  /** Calls a method with a valid token; resolves with its schema-checked result. @throws WireCallError */
  call<M extends HostMethod>(method: M, params: HostParams<M>): Promise<HostResult<M>>;
  /** Sends any request frame and resolves with the raw response to its id. */
  request(method: string, params: unknown, auth?: FrameAuth): Promise<ResponseFrame>;
  /** Sends text as is and resolves with the next response that carries `id: null` (or `expectId`, when the frame names one). */
  sendRaw(text: string, expectId?: number): Promise<ResponseFrame>;
  /** True while the WebSocket is open. */
  readonly open: boolean;
  /** Calls `listener` with the close code once the connection closes. */
  onClose(listener: (code: number) => void): void;
  /** Calls `listener` with every notification (a live view's `liveview.frame` and `liveview.ended`). */
  onNotification(listener: (notification: LiveViewNotification) => void): void;
  close(): Promise<void>;
}

/** How long a response may take before a test call gives up, in ms (well under test timeouts). */
const RESPONSE_TIMEOUT_MS = 45_000;

/**
 * Connects to a host at `url` with a fresh nonce, waits for its hello frame and verifies that the
 * hello token signs that nonce with `secret` (shared/wire-auth.ts), as the edge does.
 * @throws Error when the hello is missing, malformed or not signed with `secret` for this nonce.
 */
export async function connectHost(url: string, secret: string): Promise<HostClient> {
  const nonce = newWireNonce();
  const socket = new WebSocket(withWireNonce(url, nonce));
  const pending = new Map<number, (frame: ResponseFrame) => void>();
  const unmatched: Array<(frame: ResponseFrame) => void> = [];
  let nextId = 1;

  const hello = await new Promise<HelloFrame>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('closed before hello')));
    socket.once('message', (data) => {
      const parsed = HelloFrame.safeParse(JSON.parse(String(data)));
      if (parsed.success) resolve(parsed.data);
      else reject(new Error(`not a hello frame: ${String(data)}`));
    });
  });
  const claims = await verifyHostHello(secret, hello.params.auth, { nonce, hostId: hello.params.host_id });
  if (!claims) {
    socket.close();
    throw new Error('the hello token does not verify');
  }
  const notificationListeners: Array<(notification: LiveViewNotification) => void> = [];
  socket.on('message', (data) => {
    const json = JSON.parse(String(data)) as Record<string, unknown>;
    if ('method' in json && !('id' in json)) {
      const notification = LiveViewNotification.parse(json);
      for (const listener of notificationListeners) listener(notification);
      return;
    }
    const frame = ResponseFrame.parse(json);
    const waiter = frame.id === null ? undefined : pending.get(frame.id);
    if (waiter && frame.id !== null) {
      pending.delete(frame.id);
      waiter(frame);
    } else {
      unmatched.shift()?.(frame);
    }
  });

  const awaitResponse = (register: (deliver: (frame: ResponseFrame) => void) => void, what: string): Promise<ResponseFrame> =>
    new Promise<ResponseFrame>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no response to ${what}`)), RESPONSE_TIMEOUT_MS);
      register((frame) => {
        clearTimeout(timer);
        resolve(frame);
      });
    });

  const signFrame = async (method: string, params: unknown) => {
    const id = nextId++;
    return { id, text: await signRequestFrame(secret, claims.connectionId, { id, method, params }) };
  };

  const request = async (method: string, params: unknown, auth: FrameAuth = { kind: 'valid' }): Promise<ResponseFrame> => {
    const signed = await signFrame(method, params);
    const body = signed.text.slice(signed.text.indexOf('\n') + 1);
    const text = auth.kind === 'valid' ? signed.text : auth.kind === 'token' ? `${auth.token}\n${body}` : body;
    // A refused token gives the host no frame id to answer with: the answer carries id null.
    const response = awaitResponse((deliver) => (auth.kind === 'valid' ? pending.set(signed.id, deliver) : unmatched.push(deliver)), method);
    socket.send(text);
    return response;
  };

  return {
    hello,
    connectionId: claims.connectionId,
    signFrame,
    get open() {
      return socket.readyState === WebSocket.OPEN;
    },
    request,
    onClose: (listener) => socket.once('close', (code) => listener(code)),
    onNotification: (listener) => {
      notificationListeners.push(listener);
    },
    async call(method, params) {
      const response = await request(method, params);
      if ('error' in response) throw new WireCallError(method, response.error);
      return HOST_METHODS[method].result.parse(response.result) as HostResult<typeof method>;
    },
    sendRaw(text, expectId) {
      const response = awaitResponse((deliver) => (expectId === undefined ? unmatched.push(deliver) : pending.set(expectId, deliver)), 'a raw frame');
      socket.send(text);
      return response;
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once('close', () => resolve());
        socket.close();
      }),
  };
}
