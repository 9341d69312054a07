import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve, sep } from 'node:path';

/** Content types by file extension for the pages the demo and tests serve. */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.md': 'text/plain; charset=utf-8',
};

/** A running static file server on loopback. */
export interface StaticServer {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  readonly server: Server;
  close(): Promise<void>;
}

/**
 * Serves the files under `root` on 127.0.0.1 (port 0 picks a free one), read-only, GET and HEAD
 * only, never outside `root` (`..` and absolute paths answer 404). `handle` may answer a request
 * first (return true when it did), for endpoints a fixture needs.
 */
export async function startStaticServer(
  root: string,
  options: { port?: number; handle?: (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean> } = {},
): Promise<StaticServer> {
  const base = resolve(root);
  const server = createServer(async (req, res) => {
    try {
      if (options.handle && (await options.handle(req, res))) return;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405).end();
        return;
      }
      const pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
      let file = resolve(base, normalize(`.${pathname}`));
      if (file !== base && !file.startsWith(base + sep)) {
        res.writeHead(404).end();
        return;
      }
      let info = await stat(file).catch(() => undefined);
      if (info?.isDirectory()) {
        file = join(file, 'index.html');
        info = await stat(file).catch(() => undefined);
      }
      if (!info?.isFile()) {
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
        return;
      }
      res.writeHead(200, {
        'Content-Type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
        'Content-Length': info.size,
        'Cache-Control': 'no-store',
      });
      if (req.method === 'HEAD') res.end();
      else createReadStream(file).pipe(res);
    } catch {
      if (!res.headersSent) res.writeHead(400).end();
      else res.destroy();
    }
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolveListen());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.closeAllConnections();
        server.close(() => resolveClose());
      }),
  };
}
