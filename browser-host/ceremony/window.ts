import { MAX_VISITED_ORIGINS, MAX_VISITED_ORIGINS_CHARS } from '../../shared/authentication.ts';
import { httpOrigin } from '../../shared/origin.ts';
import type { Admission } from '../admission.ts';
import { Deadline } from '../deadline.ts';
import type { ProfileBrowser } from '../profile-browser.ts';
import type { SiteCatalog } from '../site-verification/catalog.ts';
import { passwordFieldVisible, signInWallSeen } from '../site-verification/sign-in-signal.ts';
import type { Ceremony } from './record.ts';

// The person-facing side of a ceremony: the profile's headed window showing the sign-in page,
// brought back when it went away, and read to tell whether the person got past the sign-in page.

/** Longest showing the sign-in page may take, in ms. */
const SHOW_SIGN_IN_MS = 10_000;
/** Longest reading the surface (URL, password field) may take, in ms. */
const SURFACE_READ_MS = 2_000;
/** Longest taking the window back from the person at the ceremony's end may take, in ms. */
const RETURN_WINDOW_MS = 5_000;
/** Most sentences a ceremony keeps for its live views. */
const MAX_NOTICES = 8;

/**
 * Gives the person the profile's window for the sign-in (DESIGN.md section 18): the ceremony's
 * origins become navigable, and the window may follow the sign-in top-level to other origins
 * (`Confinement.signInWindow`), each origin it loads noted in `record.visited` and each refusal
 * told to the person once through `record.notify` (the ceremony's live views). Done again on a
 * relaunched browser; a no-op when this browser already has it, or when the ceremony is over
 * (its window was taken back: {@link returnWindow}).
 */
export function openSignInWindow(record: Ceremony, browser: ProfileBrowser): void {
  if (record.claims !== undefined) return;
  browser.confinement.ceremonyOrigins = ceremonyOriginsOf(record.params);
  record.window ??= {
    onDocument: (origin) => {
      if (record.visited.at(-1) === origin) return;
      record.visited.push(origin);
      if (record.visited.length > MAX_VISITED_ORIGINS) record.visited.shift();
    },
    onRefused: (sentence) => {
      if (record.notices.includes(sentence)) return;
      record.notices.push(sentence);
      if (record.notices.length > MAX_NOTICES) record.notices.shift();
      record.notify(sentence);
    },
  };
  if (browser.confinement.signInWindow !== record.window) browser.confinement.signInWindow = record.window;
}

/** The ceremony's origins: the site's, and its sign-in page's when that is elsewhere (an identity provider). */
export function ceremonyOriginsOf(params: { readonly origin: string; readonly sign_in_url: string }): string[] {
  const signInOrigin = httpOrigin(params.sign_in_url);
  return signInOrigin === undefined ? [params.origin] : [params.origin, signInOrigin];
}

/**
 * Where the person's window went (`CeremonyEventClaims.visited_origins`, shared/authentication.ts
 * `VisitedOrigins`): the origins it loaded, less those it could not reach, a repeat folded again,
 * the newest that fit {@link MAX_VISITED_ORIGINS_CHARS}; read before the window is closed.
 */
export function visitedOrigins(record: Ceremony, browser: ProfileBrowser | undefined): string[] {
  const reached = record.visited.filter((origin) => browser === undefined || !browser.confinement.signInRefused(origin));
  const folded = reached.filter((origin, index) => index === 0 || reached[index - 1] !== origin);
  let chars = 0;
  const newest: string[] = [];
  for (const origin of folded.reverse()) {
    chars += origin.length;
    if (chars > MAX_VISITED_ORIGINS_CHARS) break;
    newest.unshift(origin);
  }
  return newest;
}

/**
 * Takes the window back from the person when the ceremony ends (DESIGN.md section 18): nothing
 * is navigable for the sign-in any more, and a window left anywhere but the ceremony's origin
 * (an identity provider's page, say) goes to `about:blank`, so no page of the sign-in is there for
 * the agent's next lease, whose first read is a fresh one. What the window's pages did meanwhile
 * (refusals, dialogs) is dropped, not reported to the agent. `release` (giving the profile back
 * to admission) is called once the window is back: at once when it is already on the site or
 * blank, else after the navigation (at most 5 s), so a lease never starts on a sign-in's page and
 * admission, woken by the release, finds the browser idle. Never throws.
 */
export async function returnWindow(record: Ceremony, browser: ProfileBrowser, release: () => void): Promise<void> {
  browser.confinement.ceremonyOrigins = [];
  if (browser.confinement.signInWindow === record.window) browser.confinement.signInWindow = undefined;
  browser.events.drain();
  const page = browser.openPage;
  const url = page?.url() ?? 'about:blank';
  if (page === undefined || url === 'about:blank' || httpOrigin(url) === record.params.origin.toLowerCase()) {
    release();
    return;
  }
  const deadline = Deadline.after(RETURN_WINDOW_MS);
  try {
    await browser.lock.run(deadline, async () => {
      browser.revisions.invalidate('the sign-in window was taken back');
      await deadline.race(browser.hostNavigation(() => page.goto('about:blank', { timeout: Math.max(1, deadline.remainingMs()) })));
      browser.events.drain();
    });
  } catch {
    // The browser went away or did not answer in time: a relaunched one starts blank anyway.
  } finally {
    deadline.dispose();
    release();
  }
}

/** Shows `sign_in_url` in the profile's page (the headed window); failures are left to polling. */
export async function showSignIn(record: Ceremony, browser: ProfileBrowser): Promise<void> {
  openSignInWindow(record, browser);
  const show = record.life.child(SHOW_SIGN_IN_MS);
  try {
    await browser.lock.run(show, async () => {
      if (record.claims !== undefined) return;
      const page = await browser.page(show);
      browser.revisions.invalidate('a person took the page over for sign-in');
      await show.race(
        browser.hostNavigation(() => page.goto(record.params.sign_in_url, { waitUntil: 'domcontentloaded', timeout: Math.max(1, show.remainingMs()) })),
      );
    });
  } catch {
    // The site may be down or slow; the person still sees the window, and polling goes on.
  } finally {
    show.dispose();
  }
}

/**
 * The URL of the person's page when it is on the ceremony's origin and no longer on a sign-in
 * page (not the sign-in path, no visible password field); undefined while the person is still
 * signing in, elsewhere, or the surface cannot be read.
 */
export async function readSurface(record: Ceremony, browser: ProfileBrowser, catalog: SiteCatalog): Promise<{ url: string } | undefined> {
  const read = record.life.child(SURFACE_READ_MS);
  try {
    const page = await browser.page(read);
    const url = page.url();
    if (url === 'about:blank') {
      // The person closed the sign-in tab: show the sign-in page again.
      await showSignIn(record, browser);
      return undefined;
    }
    if (httpOrigin(url) !== record.params.origin.toLowerCase()) return undefined;
    const definition = catalog.forOrigin(record.params.origin);
    const signInPath = definition?.sign_in_path ?? new URL(record.params.sign_in_url).pathname;
    if (new URL(url).pathname === signInPath) return undefined;
    if (definition !== undefined) {
      // A definition's verification is one cheap load that also tells a challenge apart.
      if ((await passwordFieldVisible(read, page)) !== false) return undefined;
      return { url };
    }
    // Still a sign-in step (the password page of an identifier-first flow, a passkey prompt):
    // wait, rather than launch a control browser for a page that proves nothing yet.
    const snapshot = await read.race(page.ariaSnapshot({ mode: 'ai', timeout: Math.max(1, read.remainingMs()) }));
    const title = await read.race(page.title());
    if ((await signInWallSeen(read, page, { url, title, snapshot }, catalog)).wall !== false) return undefined;
    return { url };
  } catch {
    return undefined;
  } finally {
    read.dispose();
  }
}

/**
 * The browser the ceremony holds; when it went away (crashed, closed by the person), the profile
 * is held again (relaunched) and shows the sign-in page. Undefined when that is not possible now.
 */
export async function holdSurface(record: Ceremony, admission: Admission, admissionWaitMs: number): Promise<ProfileBrowser | undefined> {
  const current = admission.browserOf(record.params.profile_id);
  if (record.hold !== undefined && current === record.hold && !current.closed) return current;
  record.hold = undefined;
  let browser: ProfileBrowser;
  try {
    browser = await admission.admit(record.params.profile_id, Math.min(admissionWaitMs, record.life.remainingMs()), { first: true });
  } catch {
    return undefined;
  }
  if (record.claims !== undefined) {
    admission.release(record.params.profile_id);
    return undefined;
  }
  record.hold = browser;
  await showSignIn(record, browser);
  return browser;
}
