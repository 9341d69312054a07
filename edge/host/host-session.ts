import type { z } from 'zod';
import type { ErrorCode } from '../../shared/errors.ts';
import { LiveViewNotification } from '../../shared/live-view.ts';
import { HelloFrame, HOST_METHODS, type HostMethod, type HostParams, type HostPhaseTimings, type HostResult, ResponseFrame } from '../../shared/protocol.ts';
import { signRequestFrame, verifyHostHello } from '../../shared/wire-auth.ts';

/**
 * The edge's client for one browser-host connection: a map of pending commands, a timeout per
 * command, and every pending command rejected when the socket closes. One session serves one
 * tool call and is closed afterwards (a live view's session lives as long as the view); nothing is
 * kept across requests.
 */

/** The part of the standard WebSocket API the session uses (Workers, Deno and Node all have it). */
export interface WireSocket {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close' | 'error', listener: (event: unknown) => void): void;
}

/** Opens a socket to one browser host. Throws {@link HostUnreachable} when it cannot. */
export interface HostConnector {
  connect(timeoutMs: number): Promise<HostSession>;
}

/** The runtime's way to reach the browser host at `hostUrl` (ws:// or wss://). */
export type HostDialer = (hostUrl: string) => HostConnector;

/** The host could not be reached or did not prove it holds the shared secret: nothing was sent. */
export class HostUnreachable extends Error {
  override readonly name = 'HostUnreachable';
}

/** The host answered a command with a typed error, e.g. `stale_revision` or `lease_lost`. */
export class HostCallError extends Error {
  override readonly name = 'HostCallError';
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The command was sent but no answer came: the connection dropped or the deadline passed. */
export class HostNoAnswer extends Error {
  override readonly name = 'HostNoAnswer';
  constructor(
    readonly reason: 'connection_lost' | 'deadline_exceeded',
    message: string,
  ) {
    super(message);
  }
}

interface Pending {
  method: HostMethod;
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

/** One authenticated connection to a browser host. */
export class HostSession {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private closedReason: string | undefined;
  private readonly notificationListeners: Array<(notification: LiveViewNotification) => void> = [];
  private readonly closeListeners: Array<(reason: string) => void> = [];
  private readonly timingListeners: Array<(method: HostMethod, timings: HostPhaseTimings) => void> = [];

  private constructor(
    private readonly socket: WireSocket,
    private readonly secret: string,
    readonly hostId: string,
    /** The connection id the host's hello named; every frame token is bound to it. */
    private readonly connectionId: string,
  ) {
    socket.addEventListener('message', (event) => this.onMessage(event.data));
    socket.addEventListener('close', () => this.onClosed('the host closed the connection'));
    socket.addEventListener('error', () => this.onClosed('the connection to the host failed'));
  }

  /**
   * Waits for the host's hello frame and verifies its signed token before anything is sent: it
   * must sign `nonce`, the nonce this connection was opened with (shared/wire-auth.ts), so a hello
   * a relay recorded on another connection is refused.
   * @param timeoutMs how long to wait for the hello, in ms.
   * @param nonce the nonce sent in the upgrade URL (`withWireNonce`).
   * @throws HostUnreachable when no valid hello arrives in time; the socket is closed.
   */
  static async handshake(socket: WireSocket, secret: string, timeoutMs: number, nonce: string): Promise<HostSession> {
    const hello = await new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => reject(new HostUnreachable(`no hello from the browser host within ${timeoutMs} ms`)), timeoutMs);
      socket.addEventListener('message', (event) => {
        clearTimeout(timer);
        resolve(event.data);
      });
      socket.addEventListener('close', () => {
        clearTimeout(timer);
        reject(new HostUnreachable('the browser host closed the connection before its hello'));
      });
    }).catch((error: unknown) => {
      socket.close(1011, 'handshake failed');
      throw error;
    });
    const frame = HelloFrame.safeParse(parseJson(hello));
    const claims = frame.success ? await verifyHostHello(secret, frame.data.params.auth, { nonce, hostId: frame.data.params.host_id }) : undefined;
    if (!claims) {
      socket.close(1008, 'unauthenticated host');
      throw new HostUnreachable('the browser host did not authenticate with the shared secret for this connection');
    }
    return new HostSession(socket, secret, claims.hostId, claims.connectionId);
  }

  /**
   * Sends one command and waits for its answer, parsed with the method's result schema.
   * @param timeoutMs how long to wait for the answer, in ms.
   * @throws HostCallError for a typed error answer; HostNoAnswer when the connection drops or the
   *   time runs out after the frame was sent; HostUnreachable when the session is already closed.
   */
  async call<M extends HostMethod>(method: M, params: HostParams<M>, timeoutMs: number): Promise<HostResult<M>> {
    if (this.closedReason !== undefined) throw new HostUnreachable(this.closedReason);
    const id = this.nextId++;
    const frame = await signRequestFrame(this.secret, this.connectionId, { id, method, params });
    const answer = new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new HostNoAnswer('deadline_exceeded', `${method} got no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { method, resolve, reject, timer });
    });
    this.socket.send(frame);
    return (await answer) as HostResult<M>;
  }

  /**
   * Calls `listener` with every notification the host sends on this connection (`{method,
   * params}` without an id: a live view's frames and its end, shared/live-view.ts), parsed with
   * their schema; malformed ones are dropped.
   */
  onNotification(listener: (notification: LiveViewNotification) => void): void {
    this.notificationListeners.push(listener);
  }

  /** Calls `listener` once with the reason when the connection closes, by either side (at once when it has). */
  onClose(listener: (reason: string) => void): void {
    if (this.closedReason !== undefined) listener(this.closedReason);
    else this.closeListeners.push(listener);
  }

  /**
   * Calls `listener` with the host's phase timings (shared/protocol.ts `HostPhaseTimings`, ms) of
   * each answered command that carries them, before the command's promise resolves.
   */
  onTimings(listener: (method: HostMethod, timings: HostPhaseTimings) => void): void {
    this.timingListeners.push(listener);
  }

  /** Closes the connection; pending commands fail with HostNoAnswer('connection_lost'). */
  close(): void {
    this.onClosed('the session was closed');
    try {
      this.socket.close(1000, 'done');
    } catch {
      // already closed
    }
  }

  private onMessage(data: unknown): void {
    const json = parseJson(data);
    if (typeof json === 'object' && json !== null && 'method' in json && !('id' in json)) {
      const notification = LiveViewNotification.safeParse(json);
      if (notification.success) for (const listener of this.notificationListeners) listener(notification.data);
      return;
    }
    const frame = ResponseFrame.safeParse(json);
    if (!frame.success || frame.data.id === null) return;
    const pending = this.pending.get(frame.data.id);
    if (!pending) return;
    this.pending.delete(frame.data.id);
    clearTimeout(pending.timer);
    if ('error' in frame.data) {
      pending.reject(new HostCallError(frame.data.error.code, frame.data.error.message));
      return;
    }
    const result = (HOST_METHODS[pending.method].result as z.ZodType).safeParse(frame.data.result);
    const timings = frame.data.timings;
    if (result.success && timings !== undefined) for (const listener of this.timingListeners) listener(pending.method, timings);
    if (result.success) pending.resolve(result.data);
    else pending.reject(new HostNoAnswer('connection_lost', `the host answered ${pending.method} with a malformed result`));
  }

  private onClosed(reason: string): void {
    if (this.closedReason !== undefined) return;
    this.closedReason = reason;
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(new HostNoAnswer('connection_lost', reason));
      this.pending.delete(id);
    }
    for (const listener of this.closeListeners.splice(0)) listener(reason);
  }
}

function parseJson(data: unknown): unknown {
  if (typeof data !== 'string') return undefined;
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}
