import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

/**
 * The scripted "person at the host's headed browser" for tests and the demo (ADR-0164: "existing
 * native sign-in is the user interaction"). It needs a host started with `HOST_PERSON_DEBUGGING=1`:
 * then every profile's Chromium also listens on a loopback DevTools port
 * (`--remote-debugging-port=0`, alongside Playwright's own pipe) and writes it to
 * `DevToolsActivePort` in its user-data directory, `<HOST_PROFILES_DIR>/<profile id>`. The person
 * connects there with `chromium.connectOverCDP`, works in the page the host showed, and
 * disconnects without closing anything. It never talks to the host's wire.
 */

/** Where to find the profile's browser and how long to keep trying, in ms (default 20,000). */
export interface PersonOptions {
  /** The profile's user-data directory, `<HOST_PROFILES_DIR>/<profile id>`. */
  readonly profileDir: string;
  readonly timeoutMs?: number;
}

/** Spacing of retries while the browser or the sign-in page is not there yet, in ms. */
const RETRY_MS = 100;
const DEFAULT_TIMEOUT_MS = 20_000;

/**
 * Signs in like a person at the headed window: waits for a page of the profile's browser showing
 * `<origin>/signin`, clicks into Username and types `username`, then Password and `password`,
 * clicks "Sign in" and waits for the site's answer to load. Disconnects without closing the
 * browser or the page.
 * @throws Error when no such page shows up, or the sign-in cannot be submitted, within
 *   `timeoutMs`.
 */
export async function signInAsPerson(options: PersonOptions & { origin: string; username: string; password: string }): Promise<void> {
  const endsAt = Date.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const signInUrl = `${options.origin}/signin`;
  await withProfileBrowser(options.profileDir, endsAt, async (context) => {
    for (;;) {
      const page = context.pages().find((candidate) => candidate.url().startsWith(signInUrl));
      if (page !== undefined) {
        try {
          await submit(page, options, endsAt);
          return;
        } catch (error) {
          // The page went away under the person's hands (e.g. the host's temporary check page).
          if (page.isClosed() && Date.now() < endsAt) continue;
          throw error;
        }
      }
      if (Date.now() >= endsAt) throw new Error(`no page showed ${signInUrl} within the time given`);
      await sleep(RETRY_MS);
    }
  });
}

/**
 * Adds the cookie `name=value` for `origin` to the profile's browser, as anything with access to
 * the browser could (for the "cookie presence is never proof" tests). Disconnects without closing.
 * @throws Error when the browser cannot be reached within `timeoutMs`.
 */
export async function plantCookie(options: PersonOptions & { origin: string; name: string; value: string }): Promise<void> {
  const endsAt = Date.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  await withProfileBrowser(options.profileDir, endsAt, (context) => context.addCookies([{ name: options.name, value: options.value, url: options.origin }]));
}

/**
 * The `http://127.0.0.1:<port>` DevTools endpoint the profile's Chromium wrote to
 * `DevToolsActivePort`, waiting for the file until `endsAt` (epoch ms).
 * @throws Error when there is none by then.
 */
export async function devToolsEndpoint(profileDir: string, endsAt: number): Promise<string> {
  for (;;) {
    const text = await readFile(path.join(profileDir, 'DevToolsActivePort'), 'utf8').catch(() => '');
    const port = text.split('\n', 1)[0]?.trim() ?? '';
    if (/^\d+$/.test(port)) return `http://127.0.0.1:${port}`;
    if (Date.now() >= endsAt) throw new Error(`no DevToolsActivePort in ${profileDir}: was the host started with HOST_PERSON_DEBUGGING=1?`);
    await sleep(RETRY_MS);
  }
}

async function submit(page: Page, options: { username: string; password: string }, endsAt: number): Promise<void> {
  const timeout = Math.max(1, endsAt - Date.now());
  await page.waitForLoadState('domcontentloaded', { timeout });
  const username = page.getByLabel('Username', { exact: true });
  await username.click({ timeout });
  await username.pressSequentially(options.username, { delay: 10, timeout });
  const password = page.getByLabel('Password', { exact: true });
  await password.click({ timeout });
  await password.pressSequentially(options.password, { delay: 10, timeout });
  const answered = page.waitForResponse((response) => response.request().method() === 'POST' && new URL(response.url()).pathname === '/signin', { timeout });
  // When the click itself fails (the host closed the window as the sign-in went through), the
  // wait is never awaited: its rejection must not surface as an unhandled one.
  answered.catch(() => undefined);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click({ timeout });
  await answered;
  await page.waitForLoadState('load', { timeout: Math.max(1, endsAt - Date.now()) });
}

/**
 * Connects to the profile's browser over CDP (retrying until `endsAt`: the browser may still be
 * starting, or the port file may be a stale one), runs `use` on its one context and disconnects.
 * Closing a browser obtained with `connectOverCDP` only disconnects: the host's Chromium, its
 * context and its pages stay as they are.
 */
async function withProfileBrowser<T>(profileDir: string, endsAt: number, use: (context: BrowserContext) => Promise<T>): Promise<T> {
  let browser: Browser | undefined;
  for (;;) {
    const endpoint = await devToolsEndpoint(profileDir, endsAt);
    try {
      browser = await chromium.connectOverCDP(endpoint, { timeout: Math.max(1, Math.min(5_000, endsAt - Date.now())) });
      break;
    } catch (error) {
      if (Date.now() >= endsAt)
        throw new Error(`cannot reach the browser of ${profileDir}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
      await sleep(RETRY_MS);
    }
  }
  try {
    const context = browser.contexts()[0];
    if (context === undefined) throw new Error(`the browser of ${profileDir} has no context`);
    return await use(context);
  } finally {
    await browser.close().catch(() => {});
  }
}
