import { newWireNonce, withWireNonce } from '../../shared/wire-auth.ts';
import type { RequestProfile } from '../metrics/request-profile.ts';
import { type HostConnector, HostSession, HostUnreachable, type WireSocket } from './host-session.ts';

/** The shape of a Workers fetch response that upgraded to a WebSocket. */
interface UpgradedResponse {
  status: number;
  webSocket?: (WireSocket & { accept(): void }) | null;
}

/**
 * Connects to a browser host the Workers way: `fetch(url, {headers: {Upgrade: 'websocket'}})`,
 * with a fresh nonce in the URL, then `response.webSocket.accept()` (no `open` event to wait for).
 * @param hostUrl ws:// or wss:// URL of the host; fetch wants http(s), so the scheme is swapped.
 * @param profile when given, the upgrade and the hello are timed into it (`upgrade`, `hello`).
 * @throws HostUnreachable (from `connect`) when the upgrade fails, does not answer within the
 *   connect's `timeoutMs`, or the host does not authenticate. The time limit ends with the
 *   upgrade: the connection then lives as long as its session.
 */
export function fetchUpgradeConnector(hostUrl: string, secret: string, profile?: RequestProfile): HostConnector {
  const httpUrl = hostUrl.replace(/^ws(s?):/, 'http$1:');
  return {
    async connect(timeoutMs) {
      const nonce = newWireNonce();
      const upgradeStarted = performance.now();
      let response: UpgradedResponse;
      // A partitioned host drops the upgrade's packets: the runtime's own connect timeout is
      // minutes away, so the upgrade gets the same bound as the hello. The bound ends with the
      // upgrade: the fetch's signal stays tied to the socket it made, and aborting it later would
      // end the connection mid-call (a signal from AbortSignal.timeout always fires).
      const upgradeAbort = new AbortController();
      const upgradeTimer = setTimeout(() => upgradeAbort.abort(), timeoutMs);
      try {
        response = (await fetch(withWireNonce(httpUrl, nonce), {
          headers: { Upgrade: 'websocket' },
          signal: upgradeAbort.signal,
        })) as unknown as UpgradedResponse;
      } catch (error) {
        if (upgradeAbort.signal.aborted) throw new HostUnreachable(`the browser host did not answer within ${timeoutMs} ms`);
        throw new HostUnreachable(`cannot reach the browser host: ${error instanceof Error ? error.message : String(error)}`);
      } finally {
        clearTimeout(upgradeTimer);
      }
      const socket = response.webSocket;
      if (!socket) throw new HostUnreachable(`the browser host refused the WebSocket upgrade (HTTP ${response.status})`);
      socket.accept();
      profile?.add('upgrade', performance.now() - upgradeStarted);
      return profile
        ? profile.time('hello', () => HostSession.handshake(socket, secret, timeoutMs, nonce))
        : HostSession.handshake(socket, secret, timeoutMs, nonce);
    },
  };
}
