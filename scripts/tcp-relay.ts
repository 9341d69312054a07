import type { AddressInfo } from 'node:net';
import { createConnection, createServer, type Socket } from 'node:net';

/**
 * A TCP relay: in front of a browser host, for tests that cut the edge's connection to the host
 * at a chosen moment ("the connection to the host is cut after the submit is dispatched", issue
 * 19) while the host and its browsers go on: the edge connects to the relay, the relay to the
 * host. {@link TcpRelay.cut} destroys every connection open through it; new connections are
 * relayed as before. Also the bridge between a host's network namespace and this machine's
 * loopback (test/support/host-network.ts).
 */
export interface TcpRelay {
  /** The port the relay listens on. */
  readonly port: number;
  /** Destroys every connection open through the relay, both ends; returns how many there were. */
  cut(): number;
  /** Stops relaying and destroys what is open. */
  close(): Promise<void>;
}

/** Where a relay listens and where it connects; each address defaults to 127.0.0.1, the listening port to any free one. */
export interface RelayEnds {
  readonly listenHost?: string;
  readonly listenPort?: number;
  readonly targetHost?: string;
}

/**
 * Starts a relay on `ends.listenHost:ends.listenPort` (default 127.0.0.1, any free port) to
 * `ends.targetHost:targetPort` (default 127.0.0.1).
 * @throws Error when the address cannot be bound.
 */
export async function startTcpRelay(targetPort: number, ends: RelayEnds = {}): Promise<TcpRelay> {
  const open = new Set<[Socket, Socket]>();
  const server = createServer((inbound) => {
    const outbound = createConnection({ host: ends.targetHost ?? '127.0.0.1', port: targetPort });
    const pair: [Socket, Socket] = [inbound, outbound];
    open.add(pair);
    // An ordinary end is passed on as an end (pipe does that), so nothing in flight is lost; an
    // error tears both down. Only cut() destroys connections that are still open. A pair is
    // forgotten only when both sockets have closed: one side's end leaves the other half open
    // (a peer behind a cut link never sends its FIN), and close() must still end it.
    const forget = () => {
      if (inbound.closed && outbound.closed) open.delete(pair);
    };
    const fail = () => {
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
    server.listen(ends.listenPort ?? 0, ends.listenHost ?? '127.0.0.1', () => resolve());
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

/**
 * As a command, `node scripts/tcp-relay.ts <listenHost>:<port>=<targetHost>:<port> ...` relays each
 * pair until it is signalled, and prints `relaying` once every one listens (test/support/host-network.ts
 * runs it inside a host's network namespace, where only plain Node is at hand: no tsx needed).
 */
if (import.meta.main) {
  const pairs = process.argv.slice(2).map((arg) => {
    const match = /^([^:=]+):(\d+)=([^:=]+):(\d+)$/.exec(arg);
    if (!match) throw new Error(`not <listenHost>:<port>=<targetHost>:<port>: ${arg}`);
    return { listenHost: match[1]!, listenPort: Number(match[2]), targetHost: match[3]!, targetPort: Number(match[4]) };
  });
  await Promise.all(pairs.map(({ targetPort, ...ends }) => startTcpRelay(targetPort, ends)));
  process.stdout.write('relaying\n');
  process.on('SIGTERM', () => process.exit(0));
}
