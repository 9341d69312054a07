import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExpressAuth, type ExpressAuthConfig, getSession } from '@auth/express';
import express, { type NextFunction, type Request, type Response } from 'express';
import Provider, { type Adapter, type AdapterPayload, type Configuration } from 'oidc-provider';

/**
 * A site whose visitors sign in through an OpenID identity provider on another origin, both run
 * by real sign-in software on loopback, for end-to-end tests of a person signing in the way most
 * sites ask today: a button on the site, the provider's own pages for password (and, with
 * `twoHop`, a one-time code) and consent, then back to the page they asked for.
 *
 * - The identity provider "Acme ID" is panva's `oidc-provider` (9.x) at
 *   `http://127.0.0.2:<port>` (`providerHost` moves it), with one client ("Acme Reports", the site
 *   below) and one account ({@link IDENTITY_PROVIDER_ACCOUNT}). Its built-in development pages are
 *   off; the login, code and consent pages are ours, driven by its interaction API (what a real
 *   deployment writes). PKCE, state, signed ID tokens and the token endpoint are the library's.
 * - The site "Acme Reports" is Auth.js (`@auth/express` 0.12, Express 5) at
 *   `http://127.0.0.1:<port>`, with Auth.js's default sign-in page and one OIDC provider
 *   "Acme ID" (id `acme`) discovered from the issuer above. Sessions are Auth.js's (JWT cookie).
 *
 * Pages, in the order a person meets them (exact visible texts, for scripted users):
 * 1. site `GET /reports` signed out: 303 to `/auth/signin?callbackUrl=<absolute /reports URL>`
 *    (Auth.js's convention). `GET /` is a public page "Acme Reports" linking "Weekly reports";
 * 2. site `GET /auth/signin` (Auth.js, title "Sign In"): one button "Sign in with Acme ID" (a form
 *    POST to `/auth/signin/acme`, which answers 302 to the provider's `/auth?...`);
 * 3. provider `GET /interaction/<uid>` (title "Sign in – Acme ID"): heading "Sign in to Acme ID",
 *    "to continue to Acme Reports", fields "Username" and "Password", button "Sign in". A wrong
 *    password shows the same page (200) with the alert "Wrong username or password". The right
 *    one: 303 to the provider's `/auth/<uid>`, which opens the next interaction;
 * 4. with `twoHop` only, provider `GET /interaction/<uid>/code` (title "Verify it's you – Acme
 *    ID"): heading "Enter your code", "We sent a 6-digit code to your phone.", field "One-time
 *    code", button "Verify"; a wrong code: the alert "That code is not right";
 * 5. provider `GET /interaction/<new uid>` (title "Allow access – Acme ID"): heading "Acme ID:
 *    Allow Acme Reports to use your account?", "Acme Reports will see your name and email
 *    address.", "Signed in as Ada Lovelace", buttons "Allow" and "Cancel". Allow: 303 to the
 *    provider's `/auth/<uid>`, 303 to the site's `/auth/callback/acme?code=...`, 302 to `/reports`.
 *    Cancel: back to the site with `access_denied`, which Auth.js answers with its sign-in page
 *    again (`/auth/signin?error=OAuthCallbackError`: "Try signing in with a different account."
 *    above the button);
 * 6. with `handBack` only, the first `/reports` of each sign-in answers 303
 *    `/account/choose?next=%2Freports` (title "Choose an account – Acme Reports"): heading
 *    "Choose an account", "to continue to Acme Reports", button "Continue as Ada Lovelace" (POST,
 *    303 to `next`);
 * 7. site `GET /reports` signed in (title "Weekly reports – Acme Reports"): heading "Weekly
 *    reports", "Signed in as Ada Lovelace", a heading "Filed reports" over a list, the link "Sign
 *    out" (Auth.js's `/auth/signout`: title "Sign Out", heading "Signout", "Are you sure you want
 *    to sign out?", button "Sign out").
 *
 * What it proves: a browser really carried the person across two origins and back (state, PKCE
 * and cookies on both hosts), since the site only shows "Signed in as" after Auth.js exchanged a
 * code at the provider's token endpoint ({@link IdentityProviderCounters.tokenExchanges}).
 * Loopback only; nothing outside is fetched (the sign-in button's logo is turned off).
 */
export interface IdentityProviderSite {
  /** `http://127.0.0.1:<port>`: the Auth.js site. */
  readonly siteOrigin: string;
  /** `http://127.0.0.2:<port>` (or the `providerHost` asked for): the issuer. */
  readonly providerOrigin: string;
  /** `<siteOrigin>/reports`: redirects to sign-in while signed out. */
  readonly protectedUrl: string;
  /** `<siteOrigin>/auth/signin`: Auth.js's default sign-in page. */
  readonly signInUrl: string;
  /** The one account at the provider; `code` only with `twoHop`. */
  readonly account: { readonly username: string; readonly password: string; readonly name: string; readonly code?: string };
  /** A copy of the counters now. */
  counters(): IdentityProviderCounters;
  /** Stops both servers and drops their open (keep-alive) connections. */
  close(): Promise<void>;
}

/** Options of {@link startIdentityProviderSite}. */
export interface IdentityProviderSiteOptions {
  /** After the password, a second provider page asks for {@link ONE_TIME_CODE} before consent. */
  twoHop?: boolean;
  /** The first `/reports` after each sign-in shows an account chooser ("Continue as Ada Lovelace"). */
  handBack?: boolean;
  /** The provider's loopback IPv4 address (default `127.0.0.2`; `127.0.0.1` shares the site's cookie jar). */
  providerHost?: string;
}

/** Server-side counts at both ends, so a test can tell what really happened. */
export interface IdentityProviderCounters {
  /** Provider: login pages shown (the first, and again after each wrong password). */
  loginPages: number;
  /** Provider: correct username and password posted. */
  logins: number;
  failedLogins: number;
  /** Provider, `twoHop`: code pages shown (again after each wrong code), right and wrong codes posted. */
  codePages: number;
  codesAccepted: number;
  codesRejected: number;
  /** Provider: consent pages served, "Allow" and "Cancel" pressed. */
  consentPages: number;
  consents: number;
  consentsCancelled: number;
  /** Provider: successful token endpoint calls (authorization code exchanged by the site). */
  tokenExchanges: number;
  /** Site: Auth.js sign-in pages served (`GET /auth/signin`). */
  signInPages: number;
  /** Site: sessions Auth.js started (its `signIn` event). */
  sessions: number;
  /** Site: `/reports` served to a signed-in visitor, and refused (sent to sign-in) otherwise. */
  protectedLoads: number;
  protectedDenied: number;
  /** Site, `handBack`: account chooser pages served, and "Continue as" pressed. */
  chooserPages: number;
  chosen: number;
  /** Site: callbacks Auth.js refused because the provider answered with an error (as after "Cancel"). */
  callbackErrors: number;
  /** Either side: anything else that went wrong (printed with its stack). */
  errors: number;
}

/** The account at the provider (`ada`). */
export const IDENTITY_PROVIDER_ACCOUNT = {
  username: 'ada',
  password: 'analytical-engine-1843',
  name: 'Ada Lovelace',
  email: 'ada@acme.test',
} as const;

/** The fixed one-time code the `twoHop` page accepts. */
export const ONE_TIME_CODE = '246810';

/** Auth.js's id for the provider: the callback is `/auth/callback/acme`. */
const PROVIDER_ID = 'acme';
const CLIENT_ID = 'acme-reports';
const ACCOUNT_ID = 'ada-0001';

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body><main>${body}</main></body></html>`;
}

function send(response: Response, html: string, status = 200): void {
  response.status(status).set({ 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).send(html);
}

/** oidc-provider's storage, in memory (its own quick-start adapter warns on every start). */
type Stored = Map<string, { payload: AdapterPayload; expiresAt: number }>;

class MemoryAdapter implements Adapter {
  constructor(
    private readonly name: string,
    private readonly store: Stored,
  ) {}
  private key(id: string): string {
    return `${this.name}:${id}`;
  }
  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    this.store.set(this.key(id), { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY });
  }
  async find(id: string): Promise<AdapterPayload | undefined> {
    const entry = this.store.get(this.key(id));
    return entry && entry.expiresAt > Date.now() ? entry.payload : undefined;
  }
  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.findBy((payload) => payload.uid === uid);
  }
  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.findBy((payload) => payload.userCode === userCode);
  }
  async consume(id: string): Promise<void> {
    const entry = this.store.get(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id: string): Promise<void> {
    this.store.delete(this.key(id));
  }
  async revokeByGrantId(grantId: string): Promise<void> {
    for (const [key, entry] of this.store) if (entry.payload.grantId === grantId) this.store.delete(key);
  }
  private findBy(match: (payload: AdapterPayload) => boolean): AdapterPayload | undefined {
    for (const [key, entry] of this.store) {
      if (key.startsWith(`${this.name}:`) && entry.expiresAt > Date.now() && match(entry.payload)) return entry.payload;
    }
    return undefined;
  }
}

async function listen(server: Server, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

function shut(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

function zeroCounters(): IdentityProviderCounters {
  return {
    loginPages: 0,
    logins: 0,
    failedLogins: 0,
    codePages: 0,
    codesAccepted: 0,
    codesRejected: 0,
    consentPages: 0,
    consents: 0,
    consentsCancelled: 0,
    tokenExchanges: 0,
    signInPages: 0,
    sessions: 0,
    protectedLoads: 0,
    protectedDenied: 0,
    chooserPages: 0,
    chosen: 0,
    callbackErrors: 0,
    errors: 0,
  };
}

/**
 * Starts the provider and the site (both on free loopback ports: bound first, then configured,
 * since the issuer and the client's redirect URI contain the ports).
 */
export async function startIdentityProviderSite(options: IdentityProviderSiteOptions = {}): Promise<IdentityProviderSite> {
  const providerHost = options.providerHost ?? '127.0.0.2';
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(providerHost)) throw new Error(`providerHost must be a 127.x.y.z loopback address, not ${providerHost}`);
  const counters = zeroCounters();
  const providerServer = createServer();
  const siteServer = createServer();
  const servers = [providerServer, siteServer];
  try {
    const providerOrigin = `http://${providerHost}:${await listen(providerServer, providerHost)}`;
    const siteOrigin = `http://127.0.0.1:${await listen(siteServer, '127.0.0.1')}`;
    const clientSecret = randomBytes(24).toString('hex');
    providerServer.on('request', identityProviderApp({ providerOrigin, siteOrigin, clientSecret, twoHop: options.twoHop === true, counters }));
    siteServer.on('request', reportsSiteApp({ providerOrigin, clientSecret, handBack: options.handBack === true, counters }));
    return {
      siteOrigin,
      providerOrigin,
      protectedUrl: `${siteOrigin}/reports`,
      signInUrl: `${siteOrigin}/auth/signin`,
      account: {
        username: IDENTITY_PROVIDER_ACCOUNT.username,
        password: IDENTITY_PROVIDER_ACCOUNT.password,
        name: IDENTITY_PROVIDER_ACCOUNT.name,
        ...(options.twoHop ? { code: ONE_TIME_CODE } : {}),
      },
      counters: () => ({ ...counters }),
      close: async () => {
        await Promise.all(servers.map(shut));
      },
    };
  } catch (error) {
    await Promise.all(servers.filter((server) => server.listening).map(shut));
    throw error;
  }
}

interface ProviderSetup {
  readonly providerOrigin: string;
  readonly siteOrigin: string;
  readonly clientSecret: string;
  readonly twoHop: boolean;
  readonly counters: IdentityProviderCounters;
}

/** The identity provider: oidc-provider, with our login, code and consent pages in front of it. */
function identityProviderApp({ providerOrigin, siteOrigin, clientSecret, twoHop, counters }: ProviderSetup): express.Express {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const stored: Stored = new Map();
  const configuration: Configuration = {
    // One store per provider, so two running fixtures never share state.
    adapter: (name) => new MemoryAdapter(name, stored),
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: clientSecret,
        client_name: 'Acme Reports',
        redirect_uris: [`${siteOrigin}/auth/callback/${PROVIDER_ID}`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'acme-id-1', use: 'sig', alg: 'RS256' }] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: { openid: ['sub'], profile: ['name', 'preferred_username'], email: ['email', 'email_verified'] },
    // Auth.js reads the profile from the ID token: put the granted claims there, as most providers do.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    // In seconds. Set, because the defaults print a notice each on first use.
    ttl: { AccessToken: 3600, AuthorizationCode: 60, Grant: 86_400, IdToken: 3600, Interaction: 3600, Session: 86_400 },
    interactions: { url: (_context, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_context, sub) =>
      sub === ACCOUNT_ID
        ? {
            accountId: ACCOUNT_ID,
            claims: () => ({
              sub: ACCOUNT_ID,
              name: IDENTITY_PROVIDER_ACCOUNT.name,
              preferred_username: IDENTITY_PROVIDER_ACCOUNT.username,
              email: IDENTITY_PROVIDER_ACCOUNT.email,
              email_verified: true,
            }),
          }
        : undefined,
  };
  const provider = new Provider(providerOrigin, configuration);
  provider.on('grant.success', () => {
    counters.tokenExchanges += 1;
  });
  provider.on('server_error', (_context, error) => {
    counters.errors += 1;
    console.error('[identity-provider-site] provider error', error);
  });
  /** Interactions whose password was right and whose code is still due (`twoHop`), by uid. */
  const awaitingCode = new Set<string>();
  const body = express.urlencoded({ extended: false });
  const app = express();
  app.disable('x-powered-by');

  const loginPage = (uid: string, error = ''): string =>
    page(
      'Sign in – Acme ID',
      `<h1>Sign in to Acme ID</h1><p>to continue to Acme Reports</p>${error && `<p role="alert">${error}</p>`}
<form method="post" action="/interaction/${uid}/login">
<p><label>Username <input name="username" type="text" autocomplete="username" required></label></p>
<p><label>Password <input name="password" type="password" autocomplete="current-password" required></label></p>
<p><button type="submit">Sign in</button></p></form>`,
    );
  const codePage = (uid: string, error = ''): string =>
    page(
      "Verify it's you – Acme ID",
      `<h1>Enter your code</h1><p>We sent a 6-digit code to your phone.</p>${error && `<p role="alert">${error}</p>`}
<form method="post" action="/interaction/${uid}/code">
<p><label>One-time code <input name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required></label></p>
<p><button type="submit">Verify</button></p></form>`,
    );
  const consentPage = (uid: string): string =>
    page(
      'Allow access – Acme ID',
      `<h1>Acme ID: Allow Acme Reports to use your account?</h1><p>Acme Reports will see your name and email address.</p>
<p>Signed in as ${IDENTITY_PROVIDER_ACCOUNT.name}</p>
<form method="post" action="/interaction/${uid}/confirm"><button type="submit">Allow</button></form>
<form method="post" action="/interaction/${uid}/abort"><button type="submit">Cancel</button></form>`,
    );

  app.get('/interaction/:uid', async (request, response, next) => {
    try {
      const { uid, prompt } = await provider.interactionDetails(request, response);
      if (prompt.name === 'login') {
        counters.loginPages += 1;
        send(response, loginPage(uid));
      } else if (prompt.name === 'consent') {
        counters.consentPages += 1;
        send(response, consentPage(uid));
      } else {
        next(new Error(`unexpected prompt ${prompt.name}`));
      }
    } catch (error) {
      next(error);
    }
  });

  app.post('/interaction/:uid/login', body, async (request, response, next) => {
    try {
      const { uid, prompt } = await provider.interactionDetails(request, response);
      if (prompt.name !== 'login') throw new Error(`login posted while the prompt is ${prompt.name}`);
      const { username, password } = request.body as { username?: string; password?: string };
      if (username !== IDENTITY_PROVIDER_ACCOUNT.username || password !== IDENTITY_PROVIDER_ACCOUNT.password) {
        counters.failedLogins += 1;
        counters.loginPages += 1;
        send(response, loginPage(uid, 'Wrong username or password'));
        return;
      }
      counters.logins += 1;
      if (twoHop) {
        awaitingCode.add(uid);
        response.redirect(303, `/interaction/${uid}/code`);
        return;
      }
      await provider.interactionFinished(request, response, { login: { accountId: ACCOUNT_ID, amr: ['pwd'] } }, { mergeWithLastSubmission: false });
    } catch (error) {
      next(error);
    }
  });

  app.get('/interaction/:uid/code', async (request, response, next) => {
    try {
      const { uid } = await provider.interactionDetails(request, response);
      if (!awaitingCode.has(uid)) {
        response.redirect(303, `/interaction/${uid}`);
        return;
      }
      counters.codePages += 1;
      send(response, codePage(uid));
    } catch (error) {
      next(error);
    }
  });

  app.post('/interaction/:uid/code', body, async (request, response, next) => {
    try {
      const { uid } = await provider.interactionDetails(request, response);
      if (!awaitingCode.has(uid)) throw new Error('a code posted before the password');
      if ((request.body as { code?: string }).code?.trim() !== ONE_TIME_CODE) {
        counters.codesRejected += 1;
        counters.codePages += 1;
        send(response, codePage(uid, 'That code is not right'));
        return;
      }
      counters.codesAccepted += 1;
      awaitingCode.delete(uid);
      await provider.interactionFinished(request, response, { login: { accountId: ACCOUNT_ID, amr: ['pwd', 'otp'] } }, { mergeWithLastSubmission: false });
    } catch (error) {
      next(error);
    }
  });

  app.post('/interaction/:uid/confirm', body, async (request, response, next) => {
    try {
      const details = await provider.interactionDetails(request, response);
      const { prompt, params, session } = details;
      if (prompt.name !== 'consent' || !session) throw new Error(`consent posted while the prompt is ${prompt.name}`);
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: String(params.client_id) });
      if (!grant) throw new Error('the grant being extended is gone');
      const missing = prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      const grantId = await grant.save();
      counters.consents += 1;
      await provider.interactionFinished(request, response, { consent: details.grantId ? {} : { grantId } }, { mergeWithLastSubmission: true });
    } catch (error) {
      next(error);
    }
  });

  app.post('/interaction/:uid/abort', async (request, response, next) => {
    try {
      counters.consentsCancelled += 1;
      await provider.interactionFinished(
        request,
        response,
        { error: 'access_denied', error_description: 'The person declined' },
        { mergeWithLastSubmission: false },
      );
    } catch (error) {
      next(error);
    }
  });

  app.use(provider.callback());
  app.use((error: unknown, _request: Request, response: Response, _next: NextFunction) => {
    counters.errors += 1;
    console.error('[identity-provider-site] provider page error', error);
    send(response, page('Something went wrong – Acme ID', '<h1>Something went wrong</h1><p>Start again from the site.</p>'), 400);
  });
  return app;
}

interface SiteSetup {
  readonly providerOrigin: string;
  readonly clientSecret: string;
  readonly handBack: boolean;
  readonly counters: IdentityProviderCounters;
}

/** The relying party: Auth.js on Express, with one protected page. */
function reportsSiteApp({ providerOrigin, clientSecret, handBack, counters }: SiteSetup): express.Express {
  const authConfig: ExpressAuthConfig = {
    basePath: '/auth',
    secret: randomBytes(32).toString('hex'),
    trustHost: true,
    providers: [
      {
        id: PROVIDER_ID,
        name: 'Acme ID',
        type: 'oidc',
        issuer: providerOrigin,
        clientId: CLIENT_ID,
        clientSecret,
        // No logo: the default would be fetched from authjs.dev.
        style: { logo: '' },
      },
    ],
    callbacks: {
      // Each sign-in gets an id, so `handBack` can show its chooser once per sign-in.
      jwt: ({ token, trigger }) => (trigger === 'signIn' ? { ...token, signInId: randomUUID() } : token),
      session: ({ session, token }) => Object.assign(session, { signInId: token.signInId }),
    },
    events: {
      signIn: () => {
        counters.sessions += 1;
      },
    },
    logger: {
      error: (error) => {
        // The provider's error answer ("Cancel": access_denied) sends the person back to
        // /auth/signin?error=OAuthCallbackError; Auth.js logs it with a stack, which says nothing here.
        if ((error as { type?: string }).type === 'OAuthCallbackError') {
          counters.callbackErrors += 1;
          return;
        }
        counters.errors += 1;
        console.error('[identity-provider-site] Auth.js error', error);
      },
    },
  };
  /** Sign-ins whose account chooser was answered (`handBack`). */
  const chosen = new Set<string>();
  const app = express();
  app.disable('x-powered-by');

  app.get('/', (_request, response) => {
    send(response, page('Acme Reports', '<h1>Acme Reports</h1><p><a href="/reports">Weekly reports</a></p>'));
  });
  app.get('/auth/signin', (_request, _response, next) => {
    counters.signInPages += 1;
    next();
  });
  // Mounted at `/auth` (not `/auth/*`, which Express 5's router rejects): `@auth/express` takes
  // its base path from `req.baseUrl`.
  app.use('/auth', ExpressAuth(authConfig));

  app.get('/reports', async (request, response, next) => {
    try {
      const session = await getSession(request, authConfig);
      const name = session?.user?.name;
      if (!name) {
        counters.protectedDenied += 1;
        const back = `${request.protocol}://${request.get('host')}${request.originalUrl}`;
        response.set('cache-control', 'no-store').redirect(303, `/auth/signin?${new URLSearchParams({ callbackUrl: back })}`);
        return;
      }
      const signInId = String((session as { signInId?: unknown }).signInId ?? '');
      if (handBack && !chosen.has(signInId)) {
        response.set('cache-control', 'no-store').redirect(303, `/account/choose?${new URLSearchParams({ next: request.originalUrl })}`);
        return;
      }
      counters.protectedLoads += 1;
      send(
        response,
        page(
          'Weekly reports – Acme Reports',
          `<h1>Weekly reports</h1><p>Signed in as ${name}</p>
<h2>Filed reports</h2><ul><li>Week 27: 14 orders shipped</li><li>Week 28: 19 orders shipped</li></ul>
<p><a href="/auth/signout">Sign out</a></p>`,
        ),
      );
    } catch (error) {
      next(error);
    }
  });

  app.get('/account/choose', async (request, response, next) => {
    try {
      const session = await getSession(request, authConfig);
      const name = session?.user?.name;
      if (!name) {
        response.redirect(303, '/reports');
        return;
      }
      counters.chooserPages += 1;
      const target = String(request.query.next ?? '/reports');
      send(
        response,
        page(
          'Choose an account – Acme Reports',
          `<h1>Choose an account</h1><p>to continue to Acme Reports</p>
<form method="post" action="/account/choose"><input type="hidden" name="next" value="${escapeAttribute(target)}">
<button type="submit">Continue as ${name}</button></form>`,
        ),
      );
    } catch (error) {
      next(error);
    }
  });

  app.post('/account/choose', express.urlencoded({ extended: false }), async (request, response, next) => {
    try {
      const session = await getSession(request, authConfig);
      const signInId = (session as { signInId?: unknown } | null)?.signInId;
      if (typeof signInId === 'string') {
        chosen.add(signInId);
        counters.chosen += 1;
      }
      const target = String((request.body as { next?: string }).next ?? '/reports');
      response.redirect(303, target.startsWith('/') && !target.startsWith('//') ? target : '/reports');
    } catch (error) {
      next(error);
    }
  });

  app.use((error: unknown, _request: Request, response: Response, _next: NextFunction) => {
    counters.errors += 1;
    console.error('[identity-provider-site] site error', error);
    send(response, page('Something went wrong – Acme Reports', '<h1>Something went wrong</h1>'), 500);
  });
  return app;
}
