import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A loopback server that counts every TCP connection and HTTP request it receives. */
export interface RequestCounter {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  readonly origin: string;
  readonly port: number;
  /** Connections accepted so far (a request that never came still opened one). */
  connections(): number;
  /** HTTP requests and WebSocket upgrades so far, as `METHOD path`. */
  requests(): readonly string[];
  close(): Promise<void>;
}

/**
 * Starts the "other end" of confinement tests on 127.0.0.1 and any free port: a server that must
 * count zero when the host's egress confinement works. Answers 200 with a small HTML page.
 */
export async function startRequestCounter(): Promise<RequestCounter> {
  let connections = 0;
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>the other end</h1>');
  });
  server.on('connection', (socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('upgrade', (request, socket) => {
    requests.push(`UPGRADE ${request.url}`);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    connections: () => connections,
    requests: () => [...requests],
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * {@link startRequestCounter} as a file fixture, closed after the file:
 * `test.extend('other', { scope: 'file' }, requestCounterFixture)`.
 */
export async function requestCounterFixture({}: object, { onCleanup }: { onCleanup: (cleanup: () => Promise<void>) => void }): Promise<RequestCounter> {
  const counter = await startRequestCounter();
  onCleanup(() => counter.close());
  return counter;
}
