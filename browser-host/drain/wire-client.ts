import WebSocket from 'ws';
import { HelloFrame, HOST_METHODS, type HostMethod, type HostParams, type HostResult, ResponseFrame } from '../../shared/protocol.ts';
import { newWireNonce, signRequestFrame, verifyHostHello, withWireNonce } from '../../shared/wire-auth.ts';
import type { Deadline } from '../deadline.ts';
import { firstLineOf } from '../host-error.ts';

/**
 * The edge's side of the wire, as small as the drain command needs it (shared/wire-auth.ts): one
 * connection opened with a fresh nonce, the host's hello verified before anything is sent, then
 * calls one at a time, each frame signed with the shared secret for this connection. The edge's
 * own client lives in edge/host/, which the host must not import.
 */
export class HostWireClient {
  readonly #socket: WebSocket;
  readonly #secret: string;
  readonly #connectionId: string;
  #nextId = 1;

  private constructor(socket: WebSocket, secret: string, connectionId: string) {
    this.#socket = socket;
    this.#secret = secret;
    this.#connectionId = connectionId;
  }

  /**
   * Connects to the host at `url` (`ws://...`) and verifies its hello within `deadline`.
   * @throws Error when the host cannot be reached, does not say hello in time, or its hello is
   *   not signed with `secret` for this connection's nonce (the socket is closed).
   */
  static async connect(deadline: Deadline, url: string, secret: string): Promise<HostWireClient> {
    const nonce = newWireNonce();
    const socket = new WebSocket(withWireNonce(url, nonce));
    try {
      const hello = await deadline.race(
        new Promise<unknown>((resolve, reject) => {
          socket.once('error', reject);
          socket.once('close', () => reject(new Error('the host closed the connection before its hello')));
          socket.once('message', (data) => resolve(parseJson(String(data))));
        }),
        'deadline_exceeded',
        `no hello from ${url} in time`,
      );
      const frame = HelloFrame.safeParse(hello);
      const claims = frame.success ? await verifyHostHello(secret, frame.data.params.auth, { nonce, hostId: frame.data.params.host_id }) : undefined;
      if (claims === undefined) throw new Error('the host did not authenticate with HOST_SHARED_SECRET');
      return new HostWireClient(socket, secret, claims.connectionId);
    } catch (error) {
      socket.terminate();
      throw new Error(`could not connect to the browser host at ${url}: ${firstLineOf(error)}`, { cause: error });
    }
  }

  /**
   * Calls `method` and waits for its answer within `deadline`.
   * @returns the result, parsed with the method's result schema.
   * @throws Error naming the host's error code and message, or the connection's failure.
   */
  async call<M extends HostMethod>(deadline: Deadline, method: M, params: HostParams<M>): Promise<HostResult<M>> {
    const id = this.#nextId++;
    const text = await signRequestFrame(this.#secret, this.#connectionId, { id, method, params });
    const answer = new Promise<ResponseFrame>((resolve, reject) => {
      const onMessage = (data: WebSocket.RawData): void => {
        const frame = ResponseFrame.safeParse(parseJson(String(data)));
        if (!frame.success || frame.data.id !== id) return;
        this.#socket.off('message', onMessage);
        resolve(frame.data);
      };
      this.#socket.on('message', onMessage);
      this.#socket.once('close', () => reject(new Error('the host closed the connection')));
    });
    this.#socket.send(text);
    const frame = await deadline.race(answer, 'deadline_exceeded', `no answer to ${method} in time`);
    if ('error' in frame) throw new Error(`${method} failed: ${frame.error.code}: ${frame.error.message}`);
    return HOST_METHODS[method].result.parse(frame.result) as HostResult<M>;
  }

  /** Closes the connection. */
  close(): void {
    this.#socket.close();
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
