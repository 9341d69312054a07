import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The cookie values the site handed out at one sign-in. */
export interface IssuedCookies {
  readonly user: string;
  /** The `session` cookie's value: a session cookie (no expiry), HttpOnly. */
  readonly session: string;
  /** The `remember` cookie's value: a persistent cookie (30 days). */
  readonly remember: string;
}

/** A site whose signed-in state lives in all three places a profile keeps it. */
export interface SessionSite {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  readonly origin: string;
  url(pathname: string): string;
  /** The cookies handed out so far, oldest first. */
  issued(): readonly IssuedCookies[];
  /** Requests the site received for `pathname` so far. */
  hits(pathname: string): number;
  close(): Promise<void>;
}

/**
 * Starts a tiny site on 127.0.0.1 (any free port) for profile snapshot tests. Routes:
 * - `GET /sign-in?user=NAME`: signs NAME in: a session cookie `session` (HttpOnly, no expiry), a
 *   persistent cookie `remember` (Max-Age 30 days), both random; the page ("Signed in as NAME")
 *   puts `draft` = "Draft of NAME" in local storage;
 * - `GET /account`: "Session: NAME" (or "none") from the session cookie, "Remembered: NAME" (or
 *   "none") from the persistent one, both checked server-side, and "Draft: ..." (or "none") read
 *   from local storage by the page;
 * - anything else: 404. Every request is counted by path ({@link SessionSite.hits}).
 */
export async function startSessionSite(): Promise<SessionSite> {
  const sessions = new Map<string, string>();
  const remembered = new Map<string, string>();
  const issued: IssuedCookies[] = [];
  const hits = new Map<string, number>();
  const cookiesOf = (request: IncomingMessage): Map<string, string> =>
    new Map(
      (request.headers.cookie ?? '')
        .split(';')
        .map((part) => part.trim().split('='))
        .filter((pair): pair is [string, string] => pair.length === 2 && pair[0] !== '')
        .map(([name, value]) => [name, value]),
    );

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://site');
    hits.set(url.pathname, (hits.get(url.pathname) ?? 0) + 1);
    const html = (body: string, headers: Record<string, string | string[]> = {}): void => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...headers });
      response.end(`<!doctype html><html><head><title>Session site</title></head><body>${body}</body></html>`);
    };
    if (url.pathname === '/sign-in') {
      const user = (url.searchParams.get('user') ?? 'ada').replace(/[^a-z]/g, '');
      const cookies: IssuedCookies = { user, session: randomBytes(16).toString('hex'), remember: randomBytes(16).toString('hex') };
      issued.push(cookies);
      sessions.set(cookies.session, user);
      remembered.set(cookies.remember, user);
      html(`<h1>Signed in as ${user}</h1><script>localStorage.setItem('draft', 'Draft of ${user}')</script>`, {
        'set-cookie': [`session=${cookies.session}; HttpOnly; Path=/; SameSite=Lax`, `remember=${cookies.remember}; Max-Age=2592000; Path=/; SameSite=Lax`],
      });
      return;
    }
    if (url.pathname === '/account') {
      const cookies = cookiesOf(request);
      const session = sessions.get(cookies.get('session') ?? '') ?? 'none';
      const remember = remembered.get(cookies.get('remember') ?? '') ?? 'none';
      html(
        `<h1>Account</h1><p>Session: ${session}</p><p>Remembered: ${remember}</p><p id="draft">Draft: unread</p>` +
          `<script>document.getElementById('draft').textContent = 'Draft: ' + (localStorage.getItem('draft') ?? 'none')</script>`,
      );
      return;
    }
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    url: (pathname) => `${origin}/${pathname.replace(/^\//, '')}`,
    issued: () => issued,
    hits: (pathname) => hits.get(pathname) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
