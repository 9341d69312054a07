import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import type { SiteVerificationDefinition } from '../shared/authentication.ts';
import type { RecipeBody } from '../shared/recipes.ts';

/**
 * The controlled report/account fixture site of ADR-0164 ("controlled report/account fixtures
 * exercise selection, saved-session checks, approval, response loss and continuation"): a tiny
 * site with a native sign-in form, a protected report list, a challenge page and server-side
 * counters. Inline HTML only, no external resources, loopback only.
 *
 * Users: `alice` / `alice-pass` (shown as `alice@example.test`), `bob` / `bob-pass`
 * (`bob@example.test`), and `carol` / `carol-pass`, whose every sign-in leads to the challenge
 * page (her session is "challenged" and never reaches a protected page).
 *
 * Routes:
 * - `GET /signin?next=/path`: the sign-in form (Username, Password, hidden `next`, "Sign in");
 * - `POST /signin` (urlencoded): valid: a new session cookie `sid` (HttpOnly, Path=/,
 *   SameSite=Lax) and 303 to `next` (local paths only; default `/reports`); carol: a challenged
 *   session and 303 `/challenge`; invalid: 401 with the form and "Wrong username or password";
 * - `GET /reports` (protected): "Signed in as <account>", the list "Filed reports", the link
 *   "New report". `?delay_ms=N` (at most 5,000) delays the answer, for tests that watch a
 *   verification in flight;
 * - `GET /reports/new` (protected): the form "Title" / "File report";
 * - `POST /reports` (protected): files the title for the account, 303 `/reports`;
 * - protected routes without a valid session: 303 `/signin?next=<path>` (counted as
 *   `protected_denied`, except `POST /reports`, which is never counted); a challenged session:
 *   303 `/challenge`;
 * - `GET /challenge`: "Security check" / "Verify you are human", no password field;
 * - `GET /public`: the unprotected "About Reports";
 * - `GET /signout`: ends the session, 303 `/signin`;
 * - with `signIn: 'identifier-first'` (the shape of most large identity providers), `GET /signin`
 *   asks for the username only ("Sign in", Username, "Next"); `POST /signin` without a password
 *   sends a known username on to `GET /signin/password?next=...&username=...` ("Enter your
 *   password", Password, "Sign in"), whose `POST /signin/password` signs in as `POST /signin` does;
 *   an unknown username gets the first step again with "No account with that username";
 * - test controls, linked from nowhere: `GET /__counters` (JSON {@link AccountCounters}) and
 *   `POST /__expire-sessions` (every session ends; 204).
 *
 * Run as a CLI (`npx tsx scripts/account-site.ts [port]`) it prints its URL and serves until
 * SIGINT or SIGTERM.
 */

/** Server-side counts, so tests can tell what really happened on the site. */
export interface AccountCounters {
  /** Successful sign-ins (challenged ones included). */
  sign_ins: number;
  failed_sign_ins: number;
  /** Sign-in forms served (`GET /signin`). */
  sign_in_pages: number;
  /** Protected pages served to a valid session (`GET /reports`, `GET /reports/new`). */
  protected_loads: number;
  /** Protected GETs refused for want of a valid session (sent to sign-in). */
  protected_denied: number;
  /** `GET /public` served. */
  public_loads: number;
  reports_filed: number;
  /** Titles filed, by account (`alice@example.test`), oldest first. */
  filed: Record<string, string[]>;
}

/** A running account site. */
export interface AccountSite {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** A copy of the counters now. */
  counters(): AccountCounters;
  /** Ends every session (as `POST /__expire-sessions`). */
  expireSessions(): void;
  /** Stops serving and drops open connections. */
  close(): Promise<void>;
}

interface User {
  readonly password: string;
  readonly account: string;
  /** Every sign-in of this user leads to the challenge. */
  readonly challenged: boolean;
}

const USERS: ReadonlyMap<string, User> = new Map([
  ['alice', { password: 'alice-pass', account: 'alice@example.test', challenged: false }],
  ['bob', { password: 'bob-pass', account: 'bob@example.test', challenged: false }],
  ['carol', { password: 'carol-pass', account: 'carol@example.test', challenged: true }],
]);

interface Session {
  readonly account: string;
  readonly challenged: boolean;
}

/** Largest request body read, in bytes. */
const MAX_BODY_BYTES = 16 * 1024;
/** Longest `delay_ms` honoured, in ms. */
const MAX_DELAY_MS = 5_000;
/** Longest report title kept, in characters. */
const MAX_TITLE_CHARS = 200;

/**
 * The reviewed site verification definition of this fixture (ADR-0164 part 2) for the site
 * served at `origin`: positive evidence on `/reports` is the "Signed in as" text and the
 * "New report" link; the challenge is "Verify you are human"; the account follows
 * "Signed in as ".
 */
export function accountSiteDefinition(origin: string): SiteVerificationDefinition {
  return {
    id: 'fixture-reports',
    version: 1,
    enabled: true,
    reviewed_fixture: 'scripts/account-site.ts',
    origin,
    sign_in_path: '/signin',
    protected_path: '/reports',
    signed_in: [
      { kind: 'text', text: 'Signed in as' },
      { kind: 'control', role: 'link', name: 'New report' },
    ],
    challenge: [{ kind: 'text', text: 'Verify you are human' }],
    account: { text_prefix: 'Signed in as ' },
    identity_providers: [],
  };
}

/** How the account site is started. */
export interface AccountSiteOptions {
  /** Port on 127.0.0.1; 0 or absent: any free port. */
  readonly port?: number;
  /** One form with username and password (default), or the username first and the password on a second page. */
  readonly signIn?: 'one-step' | 'identifier-first';
  /**
   * Test controls: called with `"<METHOD> <path>"` before each request is answered (a test can end
   * the sessions right then), and after a report is filed, with its account and title (a test can
   * cut the browser host off right then).
   */
  readonly hooks?: {
    readonly onRequest?: (key: string) => void;
    readonly onReportFiled?: (account: string, title: string) => void;
  };
}

/**
 * The reviewed recipe for this fixture (issue 19, ADR-0164 part 5): "File the weekly report" on
 * the site served at `origin`, in two steps from `/reports`: open "New report" (proven by the
 * Title field), then type the owner's `title` field and submit (proven by that title listed,
 * exactly once, in "Filed reports"). An owner's message with that phrase and a `title` field
 * binds a run to it. Justified by test/e2e/recipes.test.ts on this fixture.
 */
export function weeklyReportRecipe(origin: string, options: { enabled?: boolean } = {}): RecipeBody {
  return {
    enabled: options.enabled ?? true,
    reviewed_fixture: 'scripts/account-site.ts',
    origin,
    phrases: ['File the weekly report'],
    start_path: '/reports',
    description: "Files a report titled with the owner's title field on the Reports fixture site.",
    steps: [
      {
        title: 'Open the new report form',
        expect: { kind: 'control', role: 'link', name: 'New report' },
        target: { role: 'link', name: 'New report' },
        action: { kind: 'click' },
        postcondition: { success: { kind: 'control', role: 'textbox', name: 'Title' } },
      },
      {
        title: 'Type the title and file the report',
        expect: { kind: 'control', role: 'textbox', name: 'Title' },
        target: { role: 'textbox', name: 'Title' },
        action: { kind: 'type', value: { field: 'title' }, submit: true },
        postcondition: {
          success: { kind: 'row', collection: { role: 'list', name: 'Filed reports' }, cells: { text: '{{title}}' } },
          timeout_ms: 3_000,
        },
      },
    ],
  };
}

/**
 * Starts the account site on 127.0.0.1 (`port` 0 or absent: any free port), with a one-step
 * sign-in form unless `signIn` is `identifier-first`.
 * @throws Error when the port cannot be bound.
 */
export async function startAccountSite(options: AccountSiteOptions = {}): Promise<AccountSite> {
  const identifierFirst = options.signIn === 'identifier-first';
  const sessions = new Map<string, Session>();
  const counters: AccountCounters = {
    sign_ins: 0,
    failed_sign_ins: 0,
    sign_in_pages: 0,
    protected_loads: 0,
    protected_denied: 0,
    public_loads: 0,
    reports_filed: 0,
    filed: {},
  };
  const timers = new Set<NodeJS.Timeout>();

  const sessionOf = (request: IncomingMessage): Session | undefined => {
    const sid = cookieValue(request.headers.cookie, 'sid');
    return sid === undefined ? undefined : sessions.get(sid);
  };

  /** The session of a protected request, or undefined after answering with the right redirect. */
  const guard = (request: IncomingMessage, response: ServerResponse, path: string, count: boolean): Session | undefined => {
    const session = sessionOf(request);
    if (session === undefined) {
      if (count) counters.protected_denied += 1;
      redirect(response, `/signin?next=${encodeURIComponent(path)}`);
      return undefined;
    }
    if (session.challenged) {
      redirect(response, '/challenge');
      return undefined;
    }
    return session;
  };

  const route = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://account-site');
    const key = `${request.method} ${url.pathname}`;
    options.hooks?.onRequest?.(key);
    switch (key) {
      case 'GET /':
        return redirect(response, '/reports');
      case 'GET /signin': {
        counters.sign_in_pages += 1;
        const next = localPath(url.searchParams.get('next'));
        return html(response, 200, identifierFirst ? identifierPage(next, undefined) : signInPage(next, undefined));
      }
      case 'GET /signin/password': {
        if (!identifierFirst) return html(response, 404, page('Not found', '<h1>Not found</h1>'));
        const next = localPath(url.searchParams.get('next'));
        const username = url.searchParams.get('username') ?? '';
        if (!USERS.has(username)) return redirect(response, `/signin?next=${encodeURIComponent(next)}`);
        return html(response, 200, passwordPage(next, username, undefined));
      }
      case 'POST /signin':
      case 'POST /signin/password': {
        const form = new URLSearchParams(await body(request));
        const next = localPath(form.get('next'));
        const username = form.get('username') ?? '';
        const user = USERS.get(username);
        if (identifierFirst && form.get('password') === null) {
          if (!user) return html(response, 200, identifierPage(next, 'No account with that username'));
          return redirect(response, `/signin/password?next=${encodeURIComponent(next)}&username=${encodeURIComponent(username)}`);
        }
        if (!user || user.password !== form.get('password')) {
          counters.failed_sign_ins += 1;
          const again = identifierFirst && user ? passwordPage(next, username, 'Wrong password') : signInPage(next, 'Wrong username or password');
          return html(response, 401, again);
        }
        counters.sign_ins += 1;
        const sid = randomBytes(18).toString('base64url');
        sessions.set(sid, { account: user.account, challenged: user.challenged });
        response.setHeader('set-cookie', `sid=${sid}; HttpOnly; Path=/; SameSite=Lax`);
        return redirect(response, user.challenged ? '/challenge' : next);
      }
      case 'GET /reports': {
        const session = guard(request, response, '/reports', true);
        if (!session) return;
        counters.protected_loads += 1;
        const page = reportsPage(session.account, counters.filed[session.account] ?? []);
        const delay = Math.min(MAX_DELAY_MS, Math.max(0, Number(url.searchParams.get('delay_ms') ?? '0') || 0));
        if (delay === 0) return html(response, 200, page);
        const timer = setTimeout(() => {
          timers.delete(timer);
          html(response, 200, page);
        }, delay);
        timers.add(timer);
        return;
      }
      case 'GET /reports/new': {
        const session = guard(request, response, '/reports/new', true);
        if (!session) return;
        counters.protected_loads += 1;
        return html(response, 200, newReportPage());
      }
      case 'POST /reports': {
        const text = await body(request);
        const session = guard(request, response, '/reports/new', false);
        if (!session) return;
        const title = (new URLSearchParams(text).get('title') ?? '').trim().slice(0, MAX_TITLE_CHARS);
        if (title === '') return redirect(response, '/reports/new');
        const filed = counters.filed[session.account] ?? [];
        filed.push(title);
        counters.filed[session.account] = filed;
        counters.reports_filed += 1;
        options.hooks?.onReportFiled?.(session.account, title);
        return redirect(response, '/reports');
      }
      case 'GET /challenge':
        return html(response, 200, challengePage());
      case 'GET /public':
        counters.public_loads += 1;
        return html(response, 200, publicPage());
      case 'GET /signout': {
        const sid = cookieValue(request.headers.cookie, 'sid');
        if (sid !== undefined) sessions.delete(sid);
        response.setHeader('set-cookie', 'sid=; HttpOnly; Path=/; SameSite=Lax; Max-Age=0');
        return redirect(response, '/signin');
      }
      case 'GET /__counters':
        response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(snapshot(counters)));
        return;
      case 'POST /__expire-sessions':
        await body(request);
        sessions.clear();
        response.writeHead(204).end();
        return;
      default:
        return html(response, 404, page('Not found', '<h1>Not found</h1>'));
    }
  };

  const server = createServer((request, response) => {
    route(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(400).end();
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  let closing: Promise<void> | undefined;
  return {
    url: `${origin}/`,
    origin,
    counters: () => snapshot(counters),
    expireSessions: () => sessions.clear(),
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      })),
  };
}

function snapshot(counters: AccountCounters): AccountCounters {
  return { ...counters, filed: Object.fromEntries(Object.entries(counters.filed).map(([account, titles]) => [account, [...titles]])) };
}

/** `next` when it is a local path (`/x`, not `//host` or a URL), else `/reports`. */
function localPath(next: string | null): string {
  if (next === null || !next.startsWith('/') || next.startsWith('//') || next.includes('\\') || /[\s\0]/.test(next)) return '/reports';
  return next;
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}

function body(request: IncomingMessage): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('body too large'));
        request.destroy();
      } else {
        chunks.push(chunk);
      }
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function redirect(response: ServerResponse, location: string): void {
  response.writeHead(303, { location, 'cache-control': 'no-store' }).end();
}

function html(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(text);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, content: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><main>${content}</main></body></html>`;
}

function signInPage(next: string, problem: string | undefined): string {
  return page(
    'Sign in – Reports',
    `<h1>Sign in</h1>${problem ? `<p role="alert">${escapeHtml(problem)}</p>` : ''}
<form method="post" action="/signin">
<input type="hidden" name="next" value="${escapeHtml(next)}">
<p><label for="username">Username</label> <input id="username" name="username" type="text" autocomplete="username" autofocus></p>
<p><label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password"></p>
<p><button type="submit">Sign in</button></p>
</form>`,
  );
}

function identifierPage(next: string, problem: string | undefined): string {
  return page(
    'Sign in – Reports',
    `<h1>Sign in</h1>${problem ? `<p role="alert">${escapeHtml(problem)}</p>` : ''}
<form method="post" action="/signin">
<input type="hidden" name="next" value="${escapeHtml(next)}">
<p><label for="username">Username</label> <input id="username" name="username" type="text" autocomplete="username" autofocus></p>
<p><button type="submit">Next</button></p>
</form>`,
  );
}

function passwordPage(next: string, username: string, problem: string | undefined): string {
  return page(
    'Enter your password – Reports',
    `<h1>Welcome, ${escapeHtml(username)}</h1>${problem ? `<p role="alert">${escapeHtml(problem)}</p>` : ''}
<form method="post" action="/signin/password">
<input type="hidden" name="next" value="${escapeHtml(next)}">
<input type="hidden" name="username" value="${escapeHtml(username)}">
<p><label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password" autofocus></p>
<p><button type="submit">Sign in</button></p>
</form>`,
  );
}

function reportsPage(account: string, titles: readonly string[]): string {
  const items = titles.map((title) => `<li>${escapeHtml(title)}</li>`).join('');
  return page(
    'Reports',
    `<h1>Reports</h1><p>Signed in as ${escapeHtml(account)}</p>
<ul aria-label="Filed reports">${items}</ul>
<p><a href="/reports/new">New report</a> <a href="/signout">Sign out</a></p>`,
  );
}

function newReportPage(): string {
  return page(
    'New report',
    `<h1>New report</h1>
<form method="post" action="/reports">
<p><label for="title">Title</label> <input id="title" name="title" type="text"></p>
<p><button type="submit">File report</button></p>
</form>`,
  );
}

function challengePage(): string {
  return page('Security check', '<h1>Verify you are human</h1><p>Complete the security check to continue</p>');
}

function publicPage(): string {
  return page('About Reports', '<h1>About Reports</h1><p>Reports keeps the reports you file. <a href="/reports">Your reports</a></p>');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const site = await startAccountSite({ port: Number(process.argv[2] ?? '0') || 0 });
  process.stdout.write(`account site on ${site.url}\n`);
  const stop = (): void => void site.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
