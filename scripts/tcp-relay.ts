import type { AddressInfo } from 'node:net';
import { createConnection, createServer, type Socket } from 'node:net';

/**
 * A loopback TCP relay in front of the browser host, for tests that cut the edge's connection to
 * the host at a chosen moment ("the connection to the host is cut after the submit is
 * dispatched", issue 19) while the host and its browsers go on: the edge connects to the relay,
 * the relay to the host. {@link TcpRelay.cut} destroys every connection open through it; new
 * connections are relayed as before.
 */
export interface TcpRelay {
  /** The relay's port on 127.0.0.1. */
  readonly port: number;
  /** Destroys every connection open through the relay, both ends; returns how many there were. */
  cut(): number;
  /** Stops relaying and destroys what is open. */
  close(): Promise<void>;
}

/**
 * Starts a relay on 127.0.0.1 (any free port) to `127.0.0.1:targetPort`.
 * @throws Error when no port can be bound.
 */
export async function startTcpRelay(targetPort: number): Promise<TcpRelay> {
  const open = new Set<[Socket, Socket]>();
  const server = createServer((inbound) => {
    const outbound = createConnection({ host: '127.0.0.1', port: targetPort });
    const pair: [Socket, Socket] = [inbound, outbound];
    open.add(pair);
    // An ordinary end is passed on as an end (pipe does that), so nothing in flight is lost; an
    // error tears both down. Only cut() destroys connections that are still open.
    const forget = () => open.delete(pair);
    const fail = () => {
      forget();
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on('error', fail).on('close', forget);
    outbound.on('error', fail).on('close', forget);
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const cut = () => {
    const count = open.size;
    for (const [inbound, outbound] of [...open]) {
      inbound.destroy();
      outbound.destroy();
    }
    open.clear();
    return count;
  };
  return {
    port: (server.address() as AddressInfo).port,
    cut,
    close: () =>
      new Promise<void>((resolve) => {
        cut();
        server.close(() => resolve());
      }),
  };
}
