import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fixture site with the sign-in walls real sites use, and ordinary pages that merely look a
 * little like them. Nothing here ever signs anyone in: each protected path sends every
 * visitor to its wall. Inline HTML only, loopback only.
 *
 * Walls (the path the tests ask for, and what it shows):
 * - `/identifier-first/reports`: 303 to `/identifier-first/signin?continue=...`: "Sign in", an
 *   email field, "Next" (no password field);
 * - `/sso/reports`: 303 to `/sso/signin?returnTo=...`: "Sign in to Acme" and only
 *   "Continue with Google" / "Continue with Microsoft";
 * - `/passkey/signin`: the title "Sign in · Acme", "Welcome back" and "Use a passkey";
 * - `/passkey-field/signin`: a username field offering passkeys (`autocomplete="username webauthn"`)
 *   under "Welcome back", "Continue";
 * - `/shadow/signin`: a custom element whose closed shadow root (`attachShadow`) holds the form;
 * - `/declarative-shadow/signin`: the same form in a declarative closed shadow root;
 * - `/unauthorized/reports`: HTTP 401, "This page is for members" and a "Sign in" link;
 * - `/idp/choose`: "Choose how to continue" with "Continue with Google" / "Continue with GitHub":
 *   a wall only where a definition names this site as an identity provider;
 * Ordinary pages:
 * - `/newsletter`: a newsletter form (an email field, "Sign up");
 * - `/search`: a site search;
 * - `/home`: a public page with "Sign in" and "Create account" links in its header;
 * - `/help/recover-account`: a help article "Can't sign in? Recover your account" with a
 *   contact form (an email field, "Send");
 * - and those easily taken for walls: German and Dutch newsletter footers ("Anmelden",
 *   "Aanmelden"), a Portuguese contact form ("Entrar em contato"), help and blog pages whose title
 *   reads as sign-in, a signed-in "Login & security" page with "Add a passkey", documentation of
 *   "Sign in with Apple", "Continue with lesson 2", and a cookie consent page (`/article` redirects
 *   to `/consent?continue=/article`, "Continue with necessary cookies only").
 * Also walls that are easily missed (`/spa/signin` without a form, `/plain-username/signin`,
 * `/framed/signin` in a same-origin frame) and hostile pages (`/hostile/*`) whose scripts replace
 * the built-ins a page-world read would use.
 */
export interface SignInWallsSite {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  close(): Promise<void>;
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;
}

const FORM_FIELDS = `<label>Email <input name="email" type="email" autocomplete="username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Sign in</button>`;

const PAGES: Record<string, { status?: number; html: string }> = {
  '/identifier-first/signin': {
    html: page(
      'Sign in – Acme Accounts',
      `<main><h1>Sign in</h1><p>to continue to Acme</p>
<form method="post" action="/identifier-first/next"><label>Email or phone <input name="identifier" type="email" autocomplete="username"></label>
<a href="/help/recover-account">Forgot email?</a> <button type="submit">Next</button></form></main>`,
    ),
  },
  '/sso/signin': {
    html: page(
      'Acme',
      `<main><h1>Sign in to Acme</h1>
<p><a href="/sso/google">Continue with Google</a></p><p><a href="/sso/microsoft">Continue with Microsoft</a></p></main>`,
    ),
  },
  '/passkey/signin': {
    html: page(
      'Sign in · Acme',
      `<main><h1>Welcome back</h1><p><button type="button">Use a passkey</button></p><p><a href="/help/recover-account">Need help?</a></p></main>`,
    ),
  },
  '/passkey-field/signin': {
    html: page(
      'Acme',
      `<main><h1>Welcome back</h1><form><label>Username <input name="username" type="text" autocomplete="username webauthn"></label>
<button type="submit">Continue</button></form></main>`,
    ),
  },
  '/shadow/signin': {
    html: page(
      'Acme',
      `<main><h1>Welcome to Acme</h1><acme-sign-in></acme-sign-in></main>
<script>
customElements.define('acme-sign-in', class extends HTMLElement {
  constructor() {
    super();
    const root = this.attachShadow({ mode: 'closed' });
    root.innerHTML = \`<form>${FORM_FIELDS}</form>\`;
  }
});
</script>`,
    ),
  },
  '/declarative-shadow/signin': {
    html: page('Acme', `<main><h1>Welcome to Acme</h1><div><template shadowrootmode="closed"><form>${FORM_FIELDS}</form></template></div></main>`),
  },
  '/unauthorized/reports': {
    status: 401,
    html: page('Members only', `<main><h1>This page is for members</h1><p><a href="/identifier-first/signin">Sign in</a> to see your reports.</p></main>`),
  },
  '/idp/choose': {
    html: page(
      'Acme ID',
      `<main><h1>Choose how to continue</h1><p><a href="/idp/google">Continue with Google</a></p><p><a href="/idp/github">Continue with GitHub</a></p></main>`,
    ),
  },
  // Walls that are easily missed: no form, a plain username field, a form in a frame.
  '/spa/signin': {
    html: page(
      'Acme',
      `<div id=root><div><h1>Sign in</h1></div>${'<div>'.repeat(8)}<input type=email autocomplete=username aria-label="Email"><div role=button tabindex=0>Next</div>${'</div>'.repeat(8)}</div>`,
    ),
  },
  '/plain-username/signin': {
    html: page('Acme', `<main><h1>Sign in</h1><form><label>Username <input type=text name=username></label><button>Next</button></form></main>`),
  },
  '/framed/signin': { html: page('Acme', `<main><h2>Acme</h2><iframe title="Sign in" src="/framed/frame" width=500 height=400></iframe></main>`) },
  '/framed/frame': {
    html: page(
      'Sign in',
      `<form><h1>Sign in</h1><label>Email <input type=email name=email></label><label>Password <input type=password name=pw></label><button>Sign in</button></form>`,
    ),
  },
  // A page whose scripts replace built-ins the host could have used to read it: the host's read
  // never runs in the page's world, so it neither hangs nor believes what they say.
  '/hostile/signin': {
    html: page(
      'Acme',
      `<script>
Object.defineProperty(HTMLInputElement.prototype, 'form', { get() { for (;;) {} } });
Object.defineProperty(HTMLElement.prototype, 'innerText', { get() { for (;;) {} } });
Array.prototype.filter = function () { return ['Sign in']; };
Element.prototype.closest = function () { throw new Error('no'); };
</script><main><h1>Sign in</h1><form><label>Email <input type=email autocomplete=username></label><button>Next</button></form>
<button type=button onclick="this.textContent = 'pressed'">Press</button></main>`,
    ),
  },
  '/hostile/newsletter': {
    html: page(
      'Acme news',
      `<script>
Object.defineProperty(HTMLInputElement.prototype, 'form', { get() { for (;;) {} } });
Array.prototype.filter = function () { return ['Sign in']; };
</script><main><h1>Acme news</h1><form><label>Email <input type=email></label><button>Subscribe</button></form>
<button type=button onclick="this.textContent = 'pressed'">Press</button></main>`,
    ),
  },
  // Ordinary pages easily taken for walls.
  '/de/newsletter': {
    html: page(
      'Neuigkeiten – Bäckerei',
      `<main><h1>Neuigkeiten</h1><p>Brot des Monats.</p></main><footer><h2>Newsletter</h2><form><input type=email aria-label="E-Mail"><button>Anmelden</button></form></footer>`,
    ),
  },
  '/nl/newsletter': {
    html: page(
      'Nieuws – Bakkerij',
      `<main><h1>Nieuws</h1></main><footer><h2>Nieuwsbrief</h2><form><input type=email aria-label="E-mail"><button>Aanmelden</button></form></footer>`,
    ),
  },
  '/pt/contact': {
    html: page(
      'Fale conosco – Loja',
      `<main><h1>Entrar em contato</h1><form><input aria-label=Nome><input type=email aria-label="E-mail"><button>Enviar</button></form></main>`,
    ),
  },
  '/help/sign-in': {
    html: page(
      'Sign in to your account – Acme Help Center',
      `<main><article><h1>Sign in to your account</h1><p>Click Sign in at the top.</p><h2>Contact us</h2><form><input type=email aria-label="Your email"><button>Send</button></form></article></main>`,
    ),
  },
  '/blog/login-redesign': {
    html: page(
      'Login page redesign – Acme blog',
      `<main><article><h1>Login page redesign</h1><p>Story.</p><h2>Get the newsletter</h2><form><input type=email aria-label="Email"><button>Subscribe</button></form></article></main>`,
    ),
  },
  '/account/security': { html: page('Login & security', `<main><h1>Login &amp; security</h1><p>Hello, Jane.</p><button>Add a passkey</button></main>`) },
  '/docs/sign-in-with-apple': {
    html: page(
      'Sign in with Apple - Apple Developer',
      `<nav><a href="/docs/passkeys">Passkeys</a> <a href="/docs/js">Sign in with Apple JS</a></nav><main><h1>Sign in with Apple</h1><p>Docs.</p></main>`,
    ),
  },
  '/course/login-flows': {
    html: page('Login flows in React – Course', `<main><h1>Login flows in React</h1><a href="/course/2">Continue with lesson 2</a></main>`),
  },
  '/consent': {
    html: page(
      'Before you continue',
      `<main><h1>Before you continue</h1><p>We use cookies.</p><a href="/consent/all">Accept all</a> <a href="/consent/some">Continue with necessary cookies only</a></main>`,
    ),
  },
  '/newsletter': {
    html: page(
      'Acme news',
      `<main><h1>Acme news</h1><p>What we shipped this month.</p>
<section><h2>Get our newsletter</h2><form><label>Email <input name="email" type="email" autocomplete="email"></label> <button type="submit">Sign up</button></form></section></main>`,
    ),
  },
  '/search': {
    html: page(
      'Search – Acme',
      `<main><h1>Search</h1><form role="search"><label>Search the site <input name="q" type="search"></label> <button type="submit">Search</button></form></main>`,
    ),
  },
  '/home': {
    html: page(
      'Acme – file your reports',
      `<header><nav><a href="/">Acme</a> <a href="/identifier-first/signin">Sign in</a> <a href="/join">Create account</a></nav></header>
<main><h1>Acme helps you file reports</h1><p>Thousands of teams use Acme every week.</p></main>`,
    ),
  },
  '/help/recover-account': {
    html: page(
      "Can't sign in? Recover your account – Acme Help",
      `<header><nav><a href="/home">Acme</a> <a href="/identifier-first/signin">Sign in</a></nav></header>
<main><article><h1>Can't sign in? Recover your account</h1>
<p>If you cannot sign in, first check that you use the email you signed up with. To sign in again, reset your password from the sign-in page.</p>
<h2>Still stuck?</h2><form><label>Your email <input name="email" type="email" autocomplete="email"></label> <button type="submit">Send</button></form>
</article></main>`,
    ),
  },
};

const REDIRECTS: Record<string, (path: string) => string> = {
  '/article': (path) => `/consent?continue=${encodeURIComponent(path)}`,
  '/identifier-first/reports': (path) => `/identifier-first/signin?continue=${encodeURIComponent(path)}`,
  '/sso/reports': (path) => `/sso/signin?returnTo=${encodeURIComponent(path)}`,
};

/** Starts the walls site on 127.0.0.1 (any free port). */
export async function startSignInWallsSite(): Promise<SignInWallsSite> {
  const server = createServer((request, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://walls');
    const redirect = REDIRECTS[url.pathname];
    if (redirect !== undefined) {
      response.writeHead(303, { location: redirect(url.pathname), 'cache-control': 'no-store' }).end();
      return;
    }
    const found = PAGES[url.pathname];
    response
      .writeHead(found?.status ?? (found ? 200 : 404), { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      .end(found?.html ?? page('Not found', '<h1>Not found</h1>'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
