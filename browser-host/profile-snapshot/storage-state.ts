import { httpOrigin } from '../../shared/origin.ts';
import type { Deadline } from '../deadline.ts';
import type { ProfileBrowser } from '../profile-browser.ts';
import type { RestoredStorage } from './archive.ts';

/** An empty document the host answers itself for each origin whose local storage it puts back. */
const BLANK_DOCUMENT = '<!doctype html><html></html>';

/**
 * Puts a restored snapshot's storage state back into the profile's freshly launched browser:
 * every cookie (session cookies survive a move only this way), and for each origin the snapshot
 * saw, its local storage exactly as captured (cleared, then set). Local storage is written from a
 * temporary page of the host's own whose every request the host answers itself with an empty
 * document, so nothing reaches the network and no page script runs; the origin's IndexedDB,
 * cache and other storage stay as the restored directory has them (unlike Playwright's
 * `setStorageState`, which deletes them). Origins that are not http(s) are skipped.
 * @throws HostError('deadline_exceeded') past `deadline`; Playwright's error when the browser is
 *   gone or a cookie is malformed.
 */
export async function restoreStorageState(deadline: Deadline, browser: ProfileBrowser, storage: RestoredStorage): Promise<void> {
  if (storage.cookies.length > 0) await deadline.race(browser.addCookies(storage.cookies));
  const origins = storage.origins.filter((entry) => httpOrigin(entry.origin) !== undefined);
  if (origins.length === 0) return;
  const page = await browser.temporaryPage(deadline);
  try {
    await deadline.race(page.route('**/*', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: BLANK_DOCUMENT })));
    for (const { origin, localStorage: items } of origins) {
      await deadline.race(page.goto(origin, { timeout: Math.max(1, deadline.remainingMs()) }));
      await deadline.race(
        page.evaluate((entries) => {
          localStorage.clear();
          for (const { name, value } of entries) localStorage.setItem(name, value);
        }, items),
      );
    }
  } finally {
    await page.close().catch(() => {});
  }
}
