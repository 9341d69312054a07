import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseHostConfig } from '../../browser-host/config.ts';
import { SiteCatalog } from '../../browser-host/site-verification/catalog.ts';
import { snapshotReasons, trailReasons } from '../../browser-host/site-verification/sign-in-evidence.ts';
import { accountSiteDefinition } from '../../scripts/account-site.ts';
import { namesPasskey, namesSingleSignOn, normalizeSignInText, readsAsSignIn, signInReading, signInWords } from '../../shared/sign-in-words.ts';
import { temporaryDirectory } from '../support/host-fixture.ts';

// The reviewed word list and the pure parts of the sign-in evidence.

const words = signInWords();
const SECRET = 'x'.repeat(32);

describe('normalized text', () => {
  it('is the same for a text asked about again, right after or after others', () => {
    const texts = ['Sign In', '\uff2c\uff4f\uff47 \uff49\uff4e', 'Sign In', '  “Continue”   with   Google! ', 'Sign In', 'Sign In'];
    expect(texts.map((text) => normalizeSignInText(text))).toEqual(['sign in', 'log in', 'sign in', 'continue\u201d with google', 'sign in', 'sign in']);
  });
});

describe('what reads as sign-in', () => {
  it('titles, headings and buttons that are a sign-in phrase, or start with one, in the most used languages', () => {
    for (const text of [
      'Sign in',
      'Sign in to Acme',
      'Log in | Acme',
      'LOGIN',
      'Sign-in – Acme Accounts',
      'Se connecter à Acme',
      'Iniciar sesión',
      'Accedi',
      'Einloggen',
      'Inloggen',
      'Zaloguj się',
      'Войти',
      'Giriş yap',
      'ログイン',
      '登录您的账户',
      '로그인',
      'تسجيل الدخول',
      'Đăng nhập',
    ]) {
      expect(readsAsSignIn(text, words), text).toBe(true);
    }
  });

  it('not texts that merely mention signing in, nor sign-up, nor paragraphs', () => {
    for (const text of [
      "Can't sign in? Recover your account",
      'Trouble signing in?',
      'Sign up',
      'Signing in help',
      'Create account',
      'Login problems are usually solved by resetting your password from the page where you usually go to enter your details every morning',
      'Loginov family history',
      'Login & security',
      '',
    ]) {
      expect(readsAsSignIn(text, words), text).toBe(false);
    }
  });

  it('words that also mean something else ("Anmelden" is also "subscribe") read as sign-in only ambiguously', () => {
    expect(signInReading('Anmelden', words)).toBe('ambiguous');
    expect(signInReading('Entrar em contato', words)).toBe('ambiguous');
    expect(signInReading('Einloggen', words)).toBe('clear');
    expect(signInReading('Sign in', words)).toBe('clear');
    expect(signInReading('Newsletter', words)).toBeUndefined();
  });

  it('single-sign-on and passkey choices by their names', () => {
    expect(namesSingleSignOn('Continue with Google', words)).toBe(true);
    expect(namesSingleSignOn('Sign in with SSO', words)).toBe(true);
    expect(namesSingleSignOn('Single sign-on', words)).toBe(true);
    expect(namesSingleSignOn('Continuer avec Apple', words)).toBe(true);
    expect(namesSingleSignOn('Continue shopping', words)).toBe(false);
    expect(namesSingleSignOn('Continue with lesson 2', words)).toBe(false);
    expect(namesSingleSignOn('Continue with necessary cookies only', words)).toBe(false);
    expect(namesSingleSignOn('Continue with Apple Pay', words)).toBe(false);
    expect(namesSingleSignOn('Sign in with Microsoft account', words)).toBe(true);
    expect(namesSingleSignOn('Sign in', words)).toBe(false);
    expect(namesPasskey('Use a passkey', words)).toBe(true);
    expect(namesPasskey('Sign in with a security key', words)).toBe(true);
    expect(namesPasskey('Pass the key lime pie', words)).toBe(false);
    expect(namesPasskey('Add a passkey', words)).toBe(false);
    expect(namesPasskey('Passkeys', words)).toBe(false);
    expect(namesPasskey('Passkey verwenden', words)).toBe(true);
  });

  it("a choice that says sign in names any provider, a company's own included; continue-with needs a known one", () => {
    expect(namesSingleSignOn('Sign in with Acme ID', words, false, true)).toBe(true);
    expect(namesSingleSignOn('Log in with Keycloak', words, false, true)).toBe(true);
    expect(namesSingleSignOn('Se connecter avec FranceConnect', words, false, true)).toBe(true);
    expect(namesSingleSignOn('Continue with Acme ID', words, false, true)).toBe(false);
    expect(namesSingleSignOn('Sign in with', words, false, true)).toBe(false);
    expect(namesSingleSignOn('Sign in with your email address or your phone number here', words, false, true)).toBe(false);
    // Not a provider's name, and not on a link (an article about signing in says the same words).
    expect(namesSingleSignOn('Sign in with your work account', words, false, true)).toBe(false);
    expect(namesSingleSignOn('Log in with another account', words, false, true)).toBe(false);
    expect(namesSingleSignOn('Sign in with NextAuth', words)).toBe(false);
    // In a title or heading it names a choice only with a known provider (documentation pages).
    expect(namesSingleSignOn('Sign in with Acme ID - Developer docs', words, true)).toBe(false);
  });

  it('an operator adds phrases in the catalog file; a bad list is a ConfigError at start-up', async () => {
    const dir = await temporaryDirectory('words-');
    try {
      const file = path.join(dir.dir, 'catalog.json');
      await writeFile(file, JSON.stringify({ definitions: [], sign_in_words: { sign_in: ['Kirjaudu sisään'], single_sign_on: ['Jatka palvelulla '] } }));
      const config = parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SITE_DEFINITIONS: file });
      const catalog = new SiteCatalog(config.siteDefinitions, config.signInWords);
      expect(readsAsSignIn('Kirjaudu sisään – Acme', catalog.words)).toBe(true);
      expect(namesSingleSignOn('Jatka palvelulla Google', catalog.words)).toBe(true);
      expect(readsAsSignIn('Sign in', catalog.words)).toBe(true);

      await writeFile(file, JSON.stringify({ definitions: [], sign_in_words: { sign_in: ['x'.repeat(61)] } }));
      expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SITE_DEFINITIONS: file })).toThrow(ConfigError);
      await writeFile(file, JSON.stringify({ definitions: [], sign_in_words: { remove: ['sign in'] } }));
      expect(() => parseHostConfig({ HOST_SHARED_SECRET: SECRET, HOST_SITE_DEFINITIONS: file })).toThrow(/sign_in_words/);
    } finally {
      await dir.remove();
    }
  });
});

describe('the pure parts of the sign-in evidence', () => {
  it('a "Sign in" link in a header is not evidence; a main heading and single-sign-on buttons are, and unreachable nodes do not count', () => {
    const header = ['- banner:', '  - link "Sign in" [ref=e2]', '- main:', '  - heading "Acme helps you file reports" [level=1]'];
    expect(snapshotReasons({ title: 'Acme', lines: header }, words)).toEqual([]);
    const sso = ['- main:', '  - heading "Sign in to Acme" [level=1]', '  - link "Continue with Google" [ref=e3]'];
    expect(snapshotReasons({ title: 'Acme', lines: sso }, words).map((reason) => reason.code)).toEqual(['single_sign_on', 'sign_in_heading']);
    const behindDialog = ['- main [inert]:', '  - heading "Sign in" [level=1] [inert]', '  - button "Continue with Google" [ref=e3] [inert]'];
    expect(snapshotReasons({ title: 'Acme', lines: behindDialog }, words)).toEqual([]);
  });

  it('a redirect counts only when the sign-in page carries back a document the call went through; 401 counts', () => {
    const origin = 'http://127.0.0.1:8123';
    const redirected = trailReasons({
      url: `${origin}/login?next=%2Freports`,
      trail: { urls: [`${origin}/reports`, `${origin}/login?next=%2Freports`], status: 200 },
    });
    expect(redirected.reasons.map((reason) => reason.code)).toEqual(['redirected_with_return_url']);
    expect(redirected.requestedUrl).toBe(`${origin}/reports`);
    // A return URL the call never went through (a link to the login page with ?next=) is no redirect.
    const linked = trailReasons({ url: `${origin}/login?next=%2Freports`, trail: { urls: [`${origin}/login?next=%2Freports`], status: 200 } });
    expect(linked).toEqual({ reasons: [], requestedUrl: undefined });
    // A redirect without a return URL still names the document the call asked for.
    const bare = trailReasons({ url: `${origin}/login`, trail: { urls: [`${origin}/reports`, `${origin}/login`], status: 401 } });
    expect(bare.reasons.map((reason) => reason.code)).toEqual(['unauthorized']);
    expect(bare.requestedUrl).toBe(`${origin}/reports`);
  });

  it('an identity provider named by an enabled definition is known to the catalog', () => {
    const definition = { ...accountSiteDefinition('http://127.0.0.1:8123'), identity_providers: ['https://idp.example.test'] };
    const catalog = new SiteCatalog([definition]);
    expect(catalog.identityProviderOf('https://IDP.example.test')?.id).toBe('fixture-reports');
    expect(new SiteCatalog([{ ...definition, enabled: false }]).identityProviderOf('https://idp.example.test')).toBeUndefined();
  });
});
