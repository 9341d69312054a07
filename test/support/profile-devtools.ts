import type { Browser, Page } from 'playwright-core';
import { withProfileBrowser } from './person-window.ts';

// What a faulty site or a dying machine does to a profile's browser, for host tests of recovery:
// through the loopback DevTools port of a host started with `personDebugging` (never the wire).

/** Longest doing one thing in the profile's browser may take, in ms. */
const DEVTOOLS_TIMEOUT_MS = 10_000;

/** The one page of the profile's browser whose URL starts with `url`. @throws Error when there is none. */
function pageAt(browser: Browser, url: string): Page {
  const page = browser
    .contexts()
    .flatMap((context) => context.pages())
    .find((candidate) => candidate.url().startsWith(url));
  if (page === undefined) throw new Error(`no page at ${url}`);
  return page;
}

/**
 * Crashes the renderer of the profile's page at `url` (CDP `Page.crash`), as an out-of-memory
 * renderer would; resolves once the crash has been reported.
 */
export async function crashPage(profilesDir: string, profileId: string, url: string): Promise<void> {
  await withProfileBrowser(profilesDir, profileId, async (browser) => {
    const page = pageAt(browser, url);
    const crashed = page.waitForEvent('crash', { timeout: DEVTOOLS_TIMEOUT_MS });
    const session = await page.context().newCDPSession(page);
    // Never answered: the renderer that would answer is gone.
    session.send('Page.crash').catch(() => {});
    await crashed;
  });
}

/** Makes the profile's Chromium quit (CDP `Browser.close`), as a crash of the whole browser would. */
export async function quitBrowser(profilesDir: string, profileId: string): Promise<void> {
  await withProfileBrowser(profilesDir, profileId, async (browser) => {
    const session = await browser.newBrowserCDPSession();
    const gone = new Promise<void>((resolve) => browser.once('disconnected', () => resolve()));
    session.send('Browser.close').catch(() => {});
    await gone;
  });
}
