import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BASE_CHROMIUM_ARGS } from '../../browser-host/profiles.ts';
import {
  IDENTITY_PROVIDER_ACCOUNT,
  type IdentityProviderSite,
  type IdentityProviderSiteOptions,
  ONE_TIME_CODE,
  startIdentityProviderSite,
} from '../support/identity-provider-site.ts';

// The identity provider fixture in real Chromium: a person signs in to an Auth.js site through an
// oidc-provider identity provider on another loopback host, by the visible texts a scripted user
// will use, and both servers count what really happened.

let browser: Browser;
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: [...BASE_CHROMIUM_ARGS] });
});
afterAll(() => browser?.close());

/** Runs `body` with a fresh site and a fresh browser context (its own cookie jars), then closes the site before the context. */
async function withSite(
  options: IdentityProviderSiteOptions,
  body: (site: IdentityProviderSite, page: Page, origins: string[]) => Promise<void>,
): Promise<void> {
  const site = await startIdentityProviderSite(options);
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    // Top-level origins the page committed, consecutive repeats collapsed.
    const origins: string[] = [];
    page.on('framenavigated', (frame) => {
      if (frame !== page.mainFrame()) return;
      const origin = new URL(frame.url()).origin;
      if (origins.at(-1) !== origin) origins.push(origin);
    });
    await body(site, page, origins);
  } finally {
    // With the browser's keep-alive connections still open: close() must not wait for them.
    const started = Date.now();
    await site.close();
    expect(Date.now() - started).toBeLessThan(2_000);
    await context.close();
  }
}

async function text(page: Page, role: 'heading' | 'alert', name?: string): Promise<string> {
  const locator = name ? page.getByRole(role, { name }) : page.getByRole(role);
  await locator.waitFor();
  return (await locator.textContent()) ?? '';
}

/** From the site's sign-in page to the provider's login page. */
async function toProvider(site: IdentityProviderSite, page: Page): Promise<void> {
  await page.goto(site.protectedUrl);
  const signIn = new URL(page.url());
  expect(`${signIn.origin}${signIn.pathname}`).toBe(site.signInUrl);
  expect(signIn.searchParams.get('callbackUrl')).toBe(site.protectedUrl);
  expect(await page.title()).toBe('Sign In');
  await page.getByRole('button', { name: 'Sign in with Acme ID' }).click();
  await page.waitForURL((url) => url.origin === site.providerOrigin && url.pathname.startsWith('/interaction/'));
  expect(await page.title()).toBe('Sign in – Acme ID');
  expect(await text(page, 'heading', 'Sign in to Acme ID')).toBe('Sign in to Acme ID');
}

async function submitPassword(page: Page, password: string): Promise<void> {
  await page.getByLabel('Username').fill(IDENTITY_PROVIDER_ACCOUNT.username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

async function allow(site: IdentityProviderSite, page: Page): Promise<void> {
  await text(page, 'heading', 'Acme ID: Allow Acme Reports to use your account?');
  expect(await page.title()).toBe('Allow access – Acme ID');
  expect(new URL(page.url()).origin).toBe(site.providerOrigin);
  expect(await page.getByText('Signed in as Ada Lovelace').count()).toBe(1);
  expect(await page.getByRole('button', { name: 'Cancel' }).count()).toBe(1);
  await page.getByRole('button', { name: 'Allow' }).click();
}

async function expectReports(site: IdentityProviderSite, page: Page): Promise<void> {
  await page.waitForURL(site.protectedUrl);
  expect(await text(page, 'heading', 'Weekly reports')).toBe('Weekly reports');
  expect(await page.title()).toBe('Weekly reports – Acme Reports');
  expect(await page.getByText(`Signed in as ${IDENTITY_PROVIDER_ACCOUNT.name}`).count()).toBe(1);
}

describe('identity provider site', () => {
  test('signed out, the protected page redirects to Auth.js sign-in with a callbackUrl back to it', async () => {
    const site = await startIdentityProviderSite();
    try {
      expect(new URL(site.siteOrigin).hostname).toBe('127.0.0.1');
      expect(new URL(site.providerOrigin).hostname).toBe('127.0.0.2');
      const response = await fetch(site.protectedUrl, { redirect: 'manual' });
      expect(response.status).toBe(303);
      const location = new URL(response.headers.get('location') ?? '', site.siteOrigin);
      expect(`${location.origin}${location.pathname}`).toBe(site.signInUrl);
      expect(location.searchParams.get('callbackUrl')).toBe(site.protectedUrl);
      const discovery = (await (await fetch(`${site.providerOrigin}/.well-known/openid-configuration`)).json()) as { issuer: string };
      expect(discovery.issuer).toBe(site.providerOrigin);
      expect(site.account).toEqual({ username: 'ada', password: IDENTITY_PROVIDER_ACCOUNT.password, name: 'Ada Lovelace' });
    } finally {
      await site.close();
    }
  });

  test('a person signs in through the provider (password, consent) and lands on the page they asked for', async () => {
    await withSite({}, async (site, page, origins) => {
      await toProvider(site, page);
      await submitPassword(page, 'not-the-password');
      expect(await text(page, 'alert')).toBe('Wrong username or password');
      await submitPassword(page, site.account.password);
      await allow(site, page);
      await expectReports(site, page);
      expect(origins).toEqual([site.siteOrigin, site.providerOrigin, site.siteOrigin]);
      // Signed in: the page again, without the provider.
      await page.goto(site.protectedUrl);
      expect(await text(page, 'heading', 'Weekly reports')).toBe('Weekly reports');
      expect(site.counters()).toMatchObject({
        signInPages: 1,
        protectedDenied: 1,
        loginPages: 2,
        failedLogins: 1,
        logins: 1,
        codePages: 0,
        consentPages: 1,
        consents: 1,
        consentsCancelled: 0,
        tokenExchanges: 1,
        sessions: 1,
        protectedLoads: 2,
        chooserPages: 0,
        errors: 0,
      });
    });
  });

  test('twoHop: a one-time code page on the provider between the password and consent', async () => {
    await withSite({ twoHop: true }, async (site, page, origins) => {
      expect(site.account.code).toBe(ONE_TIME_CODE);
      await toProvider(site, page);
      await submitPassword(page, site.account.password);
      await page.waitForURL((url) => url.origin === site.providerOrigin && url.pathname.endsWith('/code'));
      expect(await page.title()).toBe("Verify it's you – Acme ID");
      expect(await text(page, 'heading', 'Enter your code')).toBe('Enter your code');
      await page.getByLabel('One-time code').fill('111111');
      await page.getByRole('button', { name: 'Verify' }).click();
      expect(await text(page, 'alert')).toBe('That code is not right');
      await page.getByLabel('One-time code').fill(ONE_TIME_CODE);
      await page.getByRole('button', { name: 'Verify' }).click();
      await allow(site, page);
      await expectReports(site, page);
      expect(origins).toEqual([site.siteOrigin, site.providerOrigin, site.siteOrigin]);
      expect(site.counters()).toMatchObject({
        logins: 1,
        codePages: 2,
        codesRejected: 1,
        codesAccepted: 1,
        consents: 1,
        tokenExchanges: 1,
        sessions: 1,
        errors: 0,
      });
    });
  });

  test('handBack: the first visit after sign-in asks "Continue as Ada Lovelace" once', async () => {
    await withSite({ handBack: true }, async (site, page, origins) => {
      await toProvider(site, page);
      await submitPassword(page, site.account.password);
      await allow(site, page);
      await page.waitForURL((url) => url.origin === site.siteOrigin && url.pathname === '/account/choose');
      expect(await page.title()).toBe('Choose an account – Acme Reports');
      expect(await text(page, 'heading', 'Choose an account')).toBe('Choose an account');
      expect(site.counters().protectedLoads).toBe(0);
      await page.getByRole('button', { name: 'Continue as Ada Lovelace' }).click();
      await expectReports(site, page);
      await page.goto(site.protectedUrl);
      expect(page.url()).toBe(site.protectedUrl);
      expect(origins).toEqual([site.siteOrigin, site.providerOrigin, site.siteOrigin]);
      expect(site.counters()).toMatchObject({ sessions: 1, tokenExchanges: 1, chooserPages: 1, chosen: 1, protectedLoads: 2, errors: 0 });
    });
  });

  test('Cancel at consent returns to the site signed out, no code exchanged', async () => {
    await withSite({}, async (site, page) => {
      await toProvider(site, page);
      await submitPassword(page, site.account.password);
      await text(page, 'heading', 'Acme ID: Allow Acme Reports to use your account?');
      await page.getByRole('button', { name: 'Cancel' }).click();
      await page.waitForURL((url) => url.origin === site.siteOrigin);
      expect(new URL(page.url()).pathname).toBe('/auth/signin');
      expect(new URL(page.url()).searchParams.get('error')).toBe('OAuthCallbackError');
      expect(await page.getByText('Try signing in with a different account.').count()).toBe(1);
      expect(await page.getByRole('button', { name: 'Sign in with Acme ID' }).count()).toBe(1);
      const response = await page.goto(site.protectedUrl);
      expect(response?.ok()).toBe(true);
      expect(new URL(page.url()).pathname).toBe('/auth/signin');
      expect(site.counters()).toMatchObject({
        consentsCancelled: 1,
        callbackErrors: 1,
        consents: 0,
        tokenExchanges: 0,
        sessions: 0,
        protectedLoads: 0,
        errors: 0,
      });
    });
  });

  test('providerHost puts the provider on another loopback address, and anything else is refused', async () => {
    await withSite({ providerHost: '127.0.0.3' }, async (site, page) => {
      expect(new URL(site.providerOrigin).hostname).toBe('127.0.0.3');
      await toProvider(site, page);
      await submitPassword(page, site.account.password);
      await allow(site, page);
      await expectReports(site, page);
    });
    await expect(startIdentityProviderSite({ providerHost: '0.0.0.0' })).rejects.toThrow(/loopback/);
  });
});
