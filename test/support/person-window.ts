import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { devToolsEndpoint } from '../../scripts/person-at-browser.ts';
import { until } from './until.ts';

// The person at a profile's headed window, through the DevTools port a host started with
// `personDebugging` gives each profile's Chromium (scripts/person-at-browser.ts): never the wire.

/** Longest reaching the profile's browser, and finding the page asked for, may take, in ms. */
const REACH_MS = 20_000;

/** Connects to the browser of `profileId` under `profilesDir`, runs `use` and disconnects (nothing is closed). */
export async function withProfileBrowser<T>(profilesDir: string, profileId: string, use: (browser: Browser) => Promise<T>): Promise<T> {
  const endpoint = await devToolsEndpoint(path.join(profilesDir, profileId), Date.now() + REACH_MS);
  const browser = await chromium.connectOverCDP(endpoint, { timeout: REACH_MS });
  try {
    return await use(browser);
  } finally {
    await browser.close().catch(() => {});
  }
}

/** The pages of a browser reached over DevTools. */
function pagesOf(browser: Browser): Page[] {
  return browser.contexts().flatMap((context) => context.pages());
}

/**
 * Acts as the person on the page of the profile's window whose URL starts with `urlPrefix`
 * (waiting up to 20 s for it; the page's own timeouts are 20 s too), then disconnects.
 * @throws Error when no such page shows up in time, or whatever `act` throws.
 */
export function atProfileWindow<T>(profilesDir: string, profileId: string, urlPrefix: string, act: (page: Page) => Promise<T>): Promise<T> {
  return withProfileBrowser(profilesDir, profileId, async (browser) => {
    const page = await until(
      () => pagesOf(browser).find((candidate) => candidate.url().startsWith(urlPrefix)),
      `a page at ${urlPrefix} in the window of ${profileId}`,
      REACH_MS,
      100,
    );
    page.setDefaultTimeout(REACH_MS);
    return act(page);
  });
}

/** The URLs of the pages of the profile's window, as the person sees them. */
export function profileWindowUrls(profilesDir: string, profileId: string): Promise<string[]> {
  return withProfileBrowser(profilesDir, profileId, async (browser) => pagesOf(browser).map((page) => page.url()));
}
