import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { closePage, pageAnswers } from '../../browser-host/page/recovery.ts';

// The host's last resort for a page that stopped answering: it must close even when Playwright's
// own close does not come back.

let browser: Browser;
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
});
afterAll(() => browser.close());

/** A page whose main thread is busy for ever once its button is clicked (the click times out). */
async function hungPage(): Promise<Page> {
  const page = await browser.newPage();
  await page.setContent('<button onclick="for (;;) {}">Hang</button>');
  await page.click('button', { timeout: 1_000 }).catch(() => {});
  return page;
}

describe('page recovery', () => {
  test('a page that never answers is told apart from one that does', async () => {
    const page = await hungPage();
    const healthy = await browser.newPage();
    // Generous for the page that answers (it returns as soon as it does): a loaded machine may be slow to run it.
    expect(await pageAnswers(healthy, 15_000)).toBe(true);
    expect(await pageAnswers(page, 1_000)).toBe(false);
    await closePage(page);
    await healthy.close();
  });

  test('closePage closes a hung page', async () => {
    const page = await hungPage();
    expect(await closePage(page)).toBe(true);
    expect(page.isClosed()).toBe(true);
  });

  test('when Playwright’s close never returns, the page is closed through its CDP target', async () => {
    const page = await hungPage();
    // The same page, except that its close() never finishes.
    const stuck = new Proxy(page, {
      get: (target, property) => (property === 'close' ? () => new Promise<void>(() => {}) : Reflect.get(target, property, target)),
    });
    expect(await closePage(stuck)).toBe(true);
    expect(page.isClosed()).toBe(true);
  });
});
