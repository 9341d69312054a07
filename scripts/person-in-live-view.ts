import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { BASE_CHROMIUM_ARGS } from '../browser-host/profiles.ts';
import { SCRIPT_HANDLES_SIGNALS } from './stop-on-signal.ts';

/**
 * The scripted owner who signs in through the console's live view (issue 16), in a Chromium of
 * their own: they open the one-time console link, go to Sign-ins, open the live view of the
 * open sign-in, and type into the sign-in window they see there, as a person would with a
 * keyboard: the username (the site's sign-in form focuses it), Tab, the password, Enter. They
 * never touch the host: everything goes through the console page.
 */
export interface LiveViewPerson {
  /** A one-time console sign-in link of the owner (`ApiClient.consoleLink`). */
  readonly consoleLink: string;
  readonly username: string;
  readonly password: string;
  /** How long to wait for each step, in ms (default 30,000). */
  readonly timeoutMs?: number;
}

/** What the person saw: how long the first frame took after opening the view, in ms, and how the view ended. */
export interface LiveViewSignIn {
  readonly firstFrameMs: number;
  readonly ended: string;
}

/**
 * Signs in through the live view and waits until the view ends (the host verified the sign-in,
 * or the view ended otherwise). Closes the person's browser afterwards.
 * @throws Error when a step does not happen in time (no open sign-in, no frame, no end).
 */
export async function signInThroughLiveView(person: LiveViewPerson): Promise<LiveViewSignIn> {
  const timeout = person.timeoutMs ?? 30_000;
  const owner = await openOwnerConsole(person.consoleLink);
  try {
    const { page } = owner;
    page.setDefaultTimeout(timeout);
    const opened = await openLiveView(page, timeout);
    await typeCredentials(page, person);
    await page
      .locator('#live-view[data-state="ended"]')
      .waitFor({ timeout })
      .catch(async (error: unknown) => {
        const state = await page.locator('#live-view').getAttribute('data-state');
        const status = await page.locator('#live-status').textContent();
        throw new Error(`the live view did not end within ${timeout} ms: it is ${state ?? 'gone'}, saying "${status ?? ''}"`, { cause: error });
      });
    return { firstFrameMs: opened, ended: (await page.locator('#live-status').textContent()) ?? '' };
  } finally {
    await owner.close();
  }
}

/** The owner's own browser, signed in to the console: its page and how to close it. */
export interface OwnerConsole {
  readonly page: Page;
  /** Closes the browser and removes its profile directory. */
  close(): Promise<void>;
}

/**
 * Launches the owner's own Chromium (headless, a fresh profile, 1280 x 900 CSS px) and signs in
 * to the console with the one-time `consoleLink` (its page's button), landing on the inbox.
 * @throws Error when the link does not sign in (used, expired) or Chromium does not start.
 */
export async function openOwnerConsole(consoleLink: string): Promise<OwnerConsole> {
  const profile = mkdtempSync(join(tmpdir(), 'owner-console-'));
  let context: BrowserContext | undefined;
  const close = async () => {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
  };
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
      headless: true,
      args: [...BASE_CHROMIUM_ARGS],
      viewport: { width: 1280, height: 900 },
      ...SCRIPT_HANDLES_SIGNALS,
    });
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(consoleLink);
    await page.getByRole('button', { name: 'Sign in to the console' }).click();
    await page.waitForURL(/\/console$/);
    return { page, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * From the console, opens the live view of the open sign-in (reloading Sign-ins until there is
 * one) and waits for its first frame.
 * @returns ms from opening the view to its first frame on screen.
 */
export async function openLiveView(page: Page, timeoutMs: number): Promise<number> {
  const until = Date.now() + timeoutMs;
  const base = new URL(page.url()).origin;
  for (;;) {
    await page.goto(`${base}/console/sign-ins`);
    const open = page.getByRole('button', { name: 'Open the live view' }).first();
    if ((await open.count()) > 0) {
      const started = Date.now();
      await open.click();
      await page
        .locator('#live-view[data-state="live"]')
        .waitFor({ timeout: Math.max(1_000, until - Date.now()) })
        .catch(async (error: unknown) => {
          const state = await page.locator('#live-view').getAttribute('data-state');
          const status = await page.locator('#live-status').textContent();
          throw new Error(`the live view did not start: it is ${state ?? 'gone'}, saying "${status ?? ''}"`, { cause: error });
        });
      return Date.now() - started;
    }
    if (Date.now() > until) throw new Error('no open sign-in to open a live view of');
    await page.waitForTimeout(500);
  }
}

/** Types the username, Tab, the password and Enter into the live view's keyboard target. */
export async function typeCredentials(page: Page, person: Pick<LiveViewPerson, 'username' | 'password'>): Promise<void> {
  await typeText(page, person.username);
  await pressKeys(page, ['Tab']);
  await typeText(page, person.password);
  await pressKeys(page, ['Enter']);
}

/**
 * Signs in to an identifier-first form through the live view, as a person does: the username and
 * Enter ("Next"), a look at the screen until the next page has had time to show its password
 * field (`stepPauseMs`, default 2,000 ms), then the password and Enter.
 */
export async function typeCredentialsInTwoSteps(page: Page, person: Pick<LiveViewPerson, 'username' | 'password'>, stepPauseMs = 2_000): Promise<void> {
  await page.getByLabel('Keyboard input to the sign-in window').focus();
  await page.keyboard.type(person.username, { delay: 20 });
  await page.keyboard.press('Enter');
  await page.waitForTimeout(stepPauseMs);
  await page.keyboard.type(person.password, { delay: 20 });
  await page.keyboard.press('Enter');
}

/**
 * Waits until the sign-in window on screen has held still for `quietMs` (no new frame drawn), at
 * most `timeoutMs`: what a person does before typing into a page that just arrived. Chromium
 * sends a frame only when the page changes, so a page that finished drawing is quiet; a focused
 * field's blinking caret redraws about twice a second, so wait before focusing a field, not after.
 * @throws Error when the window does not hold still in time.
 */
export async function waitForQuietScreen(page: Page, quietMs = 600, timeoutMs = 30_000): Promise<void> {
  await page.evaluate(
    ([quietMs, timeoutMs]) =>
      new Promise<void>((resolve, reject) => {
        const frame = document.getElementById('live-frame');
        if (frame === null) return reject(new Error('no live view on the page'));
        let lastChange = performance.now();
        const observer = new MutationObserver(() => {
          lastChange = performance.now();
        });
        observer.observe(frame, { attributes: true, attributeFilter: ['src'] });
        const startedAt = performance.now();
        const check = setInterval(() => {
          const now = performance.now();
          if (now - lastChange < quietMs && now - startedAt < timeoutMs) return;
          clearInterval(check);
          observer.disconnect();
          if (now - lastChange >= quietMs) resolve();
          else reject(new Error(`the live view did not hold still for ${quietMs} ms within ${timeoutMs} ms`));
        }, 50);
      }),
    [quietMs, timeoutMs] as const,
  );
}

/** Presses `keys` one after another on the live view's keyboard target (e.g. `['Tab', 'Enter']`). */
export async function pressKeys(page: Page, keys: readonly string[]): Promise<void> {
  await page.getByLabel('Keyboard input to the sign-in window').focus();
  for (const key of keys) await page.keyboard.press(key);
}

/** Types `text` on the live view's keyboard target, key by key. */
export async function typeText(page: Page, text: string): Promise<void> {
  await page.getByLabel('Keyboard input to the sign-in window').focus();
  await page.keyboard.type(text, { delay: 20 });
}
