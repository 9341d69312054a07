import { newWireNonce, withWireNonce } from '../../shared/wire-auth.ts';
import { type HostConnector, HostSession, HostUnreachable, type WireSocket } from './host-session.ts';

/** A standard WebSocket constructor (Deno, browsers, Node 22+, or the `ws` package on Node 20). */
export type WebSocketConstructor = new (
  url: string,
) => WireSocket & {
  addEventListener(type: 'open', listener: () => void): void;
};

/**
 * Connects to a browser host with a standard WebSocket (a fresh nonce in the URL): waits for
 * `open`, then the hello signed over that nonce.
 * @param timeoutMs total time for open plus hello, in ms.
 * @throws HostUnreachable (from `connect`) when the socket does not open or the host does not
 *   authenticate.
 */
export function standardWebSocketConnector(hostUrl: string, secret: string, WebSocketImpl: WebSocketConstructor): HostConnector {
  return {
    async connect(timeoutMs) {
      const nonce = newWireNonce();
      const socket = new WebSocketImpl(withWireNonce(hostUrl, nonce));
      // The hello may arrive right after open; buffer until the handshake listens.
      const opened = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new HostUnreachable(`the browser host did not answer within ${timeoutMs} ms`)), timeoutMs);
        socket.addEventListener('open', () => {
          clearTimeout(timer);
          resolve();
        });
        socket.addEventListener('error', () => {
          clearTimeout(timer);
          reject(new HostUnreachable(`cannot reach the browser host at ${hostUrl}`));
        });
      });
      const handshake = HostSession.handshake(socket, secret, timeoutMs, nonce);
      handshake.catch(() => undefined);
      try {
        await opened;
      } catch (error) {
        socket.close();
        throw error;
      }
      return handshake;
    },
  };
}
