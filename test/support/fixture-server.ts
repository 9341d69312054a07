import { readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStaticServer } from '../../scripts/static-server.ts';

/** The pages tests load: `test/fixtures/`. */
export const FIXTURES_DIR = fileURLToPath(new URL('../fixtures/', import.meta.url));

/** A running fixture web server on 127.0.0.1. */
export interface FixtureServer {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  readonly origin: string;
  /** Absolute URL of a fixture path, e.g. `url('button.html')`. */
  url(pathname: string): string;
  /** Hits per effect name so far (`POST /effects/<name>`). */
  effects(): Record<string, number>;
  /** Hits of one effect so far (0 if none). */
  hits(name: string): number;
  close(): Promise<void>;
}

const startedOrigins = new Set<string>();

/**
 * The origins of every fixture server this test file started so far: what a test lease names as
 * its run's origins unless the test says otherwise (each test file runs in its own module scope).
 */
export function fixtureOrigins(): string[] {
  return [...startedOrigins];
}

/**
 * Built files of the real libraries fixture pages are made with, by the name a page loads them
 * under: `/vendor/bootstrap/css/bootstrap.min.css` is `node_modules/bootstrap/dist/css/...`.
 */
const VENDOR_DIRS: Record<string, string> = {
  bootstrap: fileURLToPath(new URL('../../node_modules/bootstrap/dist/', import.meta.url)),
};
const VENDOR_TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };

/** Answers `GET /vendor/<package>/<file>` from {@link VENDOR_DIRS}; false when the path names no such file. */
function serveVendorFile(pathname: string, response: ServerResponse): boolean {
  const match = /^\/vendor\/([a-z]+)\/([A-Za-z0-9_./-]+\.(js|css))$/.exec(pathname);
  const dir = match?.[1] === undefined ? undefined : VENDOR_DIRS[match[1]];
  if (!match || dir === undefined) return false;
  const file = resolve(dir, match[2] ?? '');
  if (!file.startsWith(resolve(dir) + sep) || !statSync(file, { throwIfNoEntry: false })?.isFile()) return false;
  response.writeHead(200, { 'content-type': VENDOR_TYPES[match[3] ?? ''] ?? 'application/octet-stream', 'cache-control': 'no-store' }).end(readFileSync(file));
  return true;
}

/** Largest delay the `/delay`, `/slow`, `/fail` and `/events` routes accept, in ms. */
const MAX_DELAY_MS = 30_000;
/** Spacing of the comment lines `/events` sends to keep its stream open, in ms. */
const EVENT_STREAM_HEARTBEAT_MS = 1_000;
/** Chunk size of `/download` bodies, in bytes. */
const DOWNLOAD_CHUNK_BYTES = 64 * 1024;
/** Largest `/download` body, in bytes. */
const MAX_DOWNLOAD_BYTES = 16 * 1024 * 1024;

/** The body `/download?bytes=N` sends: N bytes (at most 16 MiB), byte i being i mod 251. */
export function downloadBody(bytes: number): Buffer {
  const length = Number.isInteger(bytes) ? Math.min(Math.max(0, bytes), MAX_DOWNLOAD_BYTES) : 0;
  return Buffer.from(Array.from({ length }, (_, index) => index % 251));
}

/** A 1x1 transparent GIF. */
const GIF = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');

/**
 * Starts a small HTTP server for host tests on 127.0.0.1 (port 0: any free port). Routes:
 * - `GET /<file>`: a file from `test/fixtures/` (no directory escape);
 * - `POST /effects/<name>`: counts one server-side effect (a click that "did something"); 204;
 * - `GET /effects`: the counts as JSON `{name: hits}`;
 * - `GET /delay?ms=N`: JSON `{"value": 42}` after N ms (a slow fetch for settling);
 * - `GET /slow?ms=N`: a 1x1 GIF after N ms (a slow image that must not hold settling back);
 * - `GET /hanging-image`: the headers and the first bytes of a GIF, then nothing, ever (an image
 *   that never finishes);
 * - `GET /poll?ms=N`: JSON `{"n": hits}` after N ms (default at once), counting hits (a page that
 *   polls);
 * - `GET /events?headers_after_ms=N`: a server-sent event stream whose headers come after N ms,
 *   then one `data: open` event and a comment line every second, never ending; with
 *   `&as=ndjson` the same body as `application/x-ndjson` (a long body that is no event stream);
 * - `GET /fail?ms=N`: after N ms, headers promising 1,000 bytes, six of them, then the connection is
 *   destroyed: the request fails (`net::ERR_CONTENT_LENGTH_MISMATCH` or similar) rather than
 *   finishing, and no byte-less reset invites Chromium to retry it.
 * - `GET /redirect?to=URL`: a 302 to URL.
 * - `GET /download?bytes=N&name=NAME&type=TYPE&chunk_ms=M`: an attachment (`Content-Disposition:
 *   attachment; filename="NAME"`) of type TYPE (default `application/octet-stream`) whose body is
 *   {@link downloadBody}`(N)`, sent in 64 KiB chunks M ms apart (default at once) without a
 *   `Content-Length`; one the client drops before its end counts the effect `download_dropped`.
 * - `GET /vendor/<package>/<file>`: a built file of a real library ({@link VENDOR_DIRS}).
 * Delayed, hanging and streaming responses still open at close are dropped.
 */
export async function startFixtureServer(root: string = FIXTURES_DIR): Promise<FixtureServer> {
  const counts = new Map<string, number>();
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, run: () => void): void => {
    const timer = setTimeout(
      () => {
        timers.delete(timer);
        run();
      },
      Math.min(Math.max(0, ms), MAX_DELAY_MS),
    );
    timers.add(timer);
  };
  const streams = new Set<NodeJS.Timeout>();
  let polls = 0;

  /** The fixture routes; false lets the static file server answer (fixtures from `root`). */
  function handle(request: IncomingMessage, response: ServerResponse): boolean {
    const url = new URL(request.url ?? '/', 'http://fixture');
    const effect = /^\/effects\/([A-Za-z0-9_-]{1,64})$/.exec(url.pathname);
    if (request.method === 'POST' && effect?.[1]) {
      counts.set(effect[1], (counts.get(effect[1]) ?? 0) + 1);
      response.writeHead(204).end();
      return true;
    }
    if (request.method !== 'GET') return false;
    const ms = Number(url.searchParams.get('ms') ?? '0');
    if (url.pathname === '/effects') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(Object.fromEntries(counts)));
    } else if (url.pathname === '/delay') {
      later(ms, () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"value":42}'));
    } else if (url.pathname === '/slow') {
      later(ms, () => response.writeHead(200, { 'content-type': 'image/gif' }).end(GIF));
    } else if (url.pathname === '/hanging-image') {
      response.writeHead(200, { 'content-type': 'image/gif', 'content-length': String(GIF.length), 'cache-control': 'no-store' });
      response.write(GIF.subarray(0, 6));
    } else if (url.pathname === '/poll') {
      polls += 1;
      const n = polls;
      later(ms, () => response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify({ n })));
    } else if (url.pathname === '/events') {
      const type = url.searchParams.get('as') === 'ndjson' ? 'application/x-ndjson' : 'text/event-stream';
      later(Number(url.searchParams.get('headers_after_ms') ?? '0'), () => streamEvents(response, type));
    } else if (url.pathname === '/download') {
      const body = downloadBody(Number(url.searchParams.get('bytes') ?? '0'));
      const name = (url.searchParams.get('name') ?? 'file.bin').replace(/["\\\r\n]/g, '_');
      const type = url.searchParams.get('type') ?? 'application/octet-stream';
      const chunkMs = Number(url.searchParams.get('chunk_ms') ?? '0');
      response.writeHead(200, { 'content-type': type, 'content-disposition': `attachment; filename="${name}"`, 'cache-control': 'no-store' });
      response.on('close', () => {
        if (!response.writableFinished) counts.set('download_dropped', (counts.get('download_dropped') ?? 0) + 1);
      });
      const send = (offset: number): void => {
        if (response.destroyed) return;
        if (offset >= body.length) {
          response.end();
        } else if (chunkMs > 0) {
          response.write(body.subarray(offset, offset + DOWNLOAD_CHUNK_BYTES));
          later(chunkMs, () => send(offset + DOWNLOAD_CHUNK_BYTES));
        } else {
          response.write(body.subarray(offset, offset + DOWNLOAD_CHUNK_BYTES), () => send(offset + DOWNLOAD_CHUNK_BYTES));
        }
      };
      send(0);
    } else if (url.pathname.startsWith('/vendor/')) {
      return serveVendorFile(url.pathname, response);
    } else if (url.pathname === '/redirect') {
      response.writeHead(302, { location: url.searchParams.get('to') ?? '/', 'cache-control': 'no-store' }).end();
    } else if (url.pathname === '/fail') {
      later(ms, () => {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        response.write('{"part', () => response.socket?.destroy());
      });
    } else {
      return false;
    }
    return true;
  }

  /** An event stream that never ends: headers now, one event, then a comment every second. */
  function streamEvents(response: ServerResponse, type: string): void {
    response.writeHead(200, { 'content-type': type, 'cache-control': 'no-store', connection: 'keep-alive' });
    response.write('data: open\n\n');
    const heartbeat = setInterval(() => response.write(': still here\n\n'), EVENT_STREAM_HEARTBEAT_MS);
    streams.add(heartbeat);
    response.on('close', () => {
      clearInterval(heartbeat);
      streams.delete(heartbeat);
    });
  }

  const files = await startStaticServer(root, { handle });
  const origin = files.origin;
  startedOrigins.add(origin);
  return {
    origin,
    url: (pathname) => new URL(pathname, `${origin}/`).href,
    effects: () => Object.fromEntries(counts),
    hits: (name) => counts.get(name) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        for (const heartbeat of streams) clearInterval(heartbeat);
        streams.clear();
        resolve(files.close());
      }),
  };
}
