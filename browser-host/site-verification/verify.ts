import { createHash } from 'node:crypto';
import type { Page } from 'playwright-core';
import { type AriaNode, parseAriaSnapshot, textOf, walkAria } from '../../shared/aria-snapshot.ts';
import type { SiteVerificationDefinition } from '../../shared/authentication.ts';
import { httpOrigin } from '../../shared/origin.ts';
import { readPredicate } from '../../shared/predicate-evaluation.ts';
import type { Admission, LoadReservation } from '../admission.ts';
import { Deadline } from '../deadline.ts';
import { firstLineOf, HostError } from '../host-error.ts';
import { withCdpSession } from '../page/cdp-session.ts';
import type { ProfileBrowser } from '../profile-browser.ts';
import { type ControlBrowser, type LaunchOptions, launchControlBrowser } from '../profiles.ts';
import { SerialLock } from '../serial-lock.ts';
import type { SiteCatalog } from './catalog.ts';
import { bindAccount } from './seal.ts';
import { challengeSeen, signInWallSeen } from './sign-in-signal.ts';

/** Temporary loads every remote verification reserves (ADR-0164; DESIGN.md section 11). */
export const VERIFICATION_LOADS = 2;
/** Longest one protected load may take to reach `load`, in ms. */
const LOAD_MS = 10_000;
/** Longest a load waits for the network to go quiet after `load` (late client-side redirects), in ms. */
const QUIET_MS = 1_500;
/** How long cleanup (closing the temporary page and the control browser) may take, in ms. */
const CLEANUP_MS = 10_000;
/** Longest account evidence kept, in characters. */
const MAX_ACCOUNT_CHARS = 200;

/**
 * Rendered text that marks a challenge on any site (the generic challenge detection of unknown
 * sites), compared lower-case against the snapshot text.
 */
export const GENERIC_CHALLENGE_MARKERS: readonly string[] = [
  'verify you are human',
  'are you a robot',
  "confirm you're not a robot",
  'captcha',
  'security check',
  'unusual traffic',
  'checking your browser',
  'verifying you are human',
  "i'm not a robot",
  'i am not a robot',
  'human verification',
  'press and hold',
];

/** What one temporary load of a protected URL showed. */
export interface LoadEvidence {
  /** Final URL of the document. */
  readonly url: string;
  /** HTTP status of the main response, when there was one. */
  readonly status: number | undefined;
  /** The AI-mode aria snapshot text. */
  readonly snapshot: string;
  /**
   * The page asks for sign-in, by the same evidence as an observation's sign-in signal
   * (sign-in-signal.ts: a password field, an identifier-first form, passkey or single-sign-on
   * choices, a redirect carrying the URL back, 401, ...); undefined when that could not be checked.
   */
  readonly signInWall: boolean | undefined;
  /**
   * The wall asks for a credential itself (a password or identifier form, a passkey or
   * single-sign-on choice, 401, a definition's sign-in page): only that shows a control load was
   * sent to sign-in. A consent or region page reached by a redirect that carries the URL back
   * does not.
   */
  readonly credentialWall?: boolean;
  /** The browser's user agent, so a control load can present itself the same way. */
  readonly userAgent?: string;
}

/** A verification's verdict (the ceremony outcome it supports, and how it was reached). */
export interface VerificationResult {
  readonly outcome: 'verified' | 'challenge' | 'account_mismatch' | 'not_verified';
  readonly method: 'definition' | 'differential';
  readonly definition?: { readonly id: string; readonly version: number };
  /** SHA-256 hex of the account evidence, when the definition shows an account. */
  readonly account_sha256?: string;
  /** Why, in a few words (for logs and tests; never sent to agents). */
  readonly detail: string;
}

/** What a verifier works with. */
export interface SessionVerifierOptions {
  readonly admission: Admission;
  readonly catalog: SiteCatalog;
  /** How control browsers are launched (same Chromium, same flags). */
  readonly launchOptions: LaunchOptions;
  /** Where account seals live (next to the profiles' user-data directories). */
  readonly profilesDir: string;
  /** Longest a verification waits for its loads to be reserved, in ms (within its deadline). */
  readonly reserveWaitMs: number;
}

/**
 * Remote session verification (ADR-0164 part 2). One verification per profile at a time, under
 * the profile's verification lock; inside it, two temporary loads are reserved against admission
 * ({@link Admission.reserveLoads}) and held until cleanup has finished. The lock is taken first,
 * so a caller waiting for it never holds admission.
 */
export class SessionVerifier {
  readonly #options: SessionVerifierOptions;
  readonly #locks = new Map<string, SerialLock>();

  constructor(options: SessionVerifierOptions) {
    this.#options = options;
  }

  /**
   * Verifies that `browser`'s profile holds a signed-in session for `origin`, by loading
   * `protectedUrl` in a temporary page of the profile's context:
   * - with an enabled definition for the origin: `verified` only on positive protected-state
   *   evidence (final path is `protected_path`, every `signed_in` predicate seen, no challenge
   *   predicate, no visible password field) and, when the definition shows an account, an account
   *   that matches the profile's seal (the first one seen seals it) — else `account_mismatch`;
   *   a challenge predicate seen is `challenge`;
   * - without one (unknown site): a bounded protected-page differential: the profile's load must
   *   reach the protected path with no password field and no generic challenge marker, while a
   *   clean control browser's load of the same URL is sent to sign-in; if the control load
   *   reaches the page too, nothing is proven (`not_verified`).
   * Cookies are never looked at. Cleanup (temporary page, control browser and its directory)
   * finishes before the reservation is given back.
   * @throws HostError('deadline_exceeded') when the lock is not free in time;
   *   HostError('admission_full') when the loads cannot be reserved in time;
   *   HostError('host_unavailable' | 'page_changed' | 'navigation_failed') when a load cannot be
   *   made at all. A thrown error means "could not verify", never a verdict.
   */
  async verify(deadline: Deadline, browser: ProfileBrowser, origin: string, protectedUrl: string): Promise<VerificationResult> {
    const lock = this.#lockOf(browser.profileId);
    try {
      return await lock.run(deadline, async () => {
        const wait = deadline.child(this.#options.reserveWaitMs);
        let reservation: LoadReservation;
        try {
          reservation = await this.#options.admission.reserveLoads(VERIFICATION_LOADS, wait);
        } finally {
          wait.dispose();
        }
        try {
          return await this.#verifyReserved(deadline, browser, origin, protectedUrl);
        } finally {
          reservation.release();
        }
      });
    } finally {
      if (lock.held === 0 && this.#locks.get(browser.profileId) === lock) this.#locks.delete(browser.profileId);
    }
  }

  /** Profiles whose verification runs or waits. */
  get busy(): number {
    return this.#locks.size;
  }

  #lockOf(profileId: string): SerialLock {
    let lock = this.#locks.get(profileId);
    if (lock === undefined) {
      lock = new SerialLock();
      this.#locks.set(profileId, lock);
    }
    return lock;
  }

  async #verifyReserved(deadline: Deadline, browser: ProfileBrowser, origin: string, protectedUrl: string): Promise<VerificationResult> {
    const definition = this.#options.catalog.forOrigin(origin);
    // A definition names the page whose rendered state is the evidence; other sites are checked on
    // the page the run was after.
    const target = definition === undefined ? protectedUrl : new URL(definition.protected_path, definition.origin).href;
    const profileLoad = await withTemporaryPage(deadline, browser, (page) => loadForEvidence(deadline, page, target, this.#options.catalog));
    if (definition !== undefined) return this.#judgeWithDefinition(browser.profileId, definition, profileLoad);

    const reached = reachedProtected(profileLoad, protectedUrl);
    if (!reached.ok) {
      return {
        outcome: genericChallengeSeen(profileLoad.snapshot) ? 'challenge' : 'not_verified',
        method: 'differential',
        detail: `profile load: ${reached.why}`,
      };
    }
    // The control presents the profile's user agent: a site must not tell them apart by it.
    // The control visits once before the load that counts: the profile has been to the site before
    // (that is how it met the wall), and whatever a first visit leaves (a tracking or consent
    // cookie) must not pass for a session.
    const controlLoad = await withControlBrowser(deadline, this.#options.launchOptions, profileLoad.userAgent, [new URL(protectedUrl).origin], async (page) => {
      await loadForEvidence(deadline, page, protectedUrl, this.#options.catalog);
      return loadForEvidence(deadline, page, protectedUrl, this.#options.catalog);
    });
    if (!sentToSignIn(controlLoad)) {
      return { outcome: 'not_verified', method: 'differential', detail: 'inconclusive: a clean control load reached the page too' };
    }
    return { outcome: 'verified', method: 'differential', detail: 'the profile reached the protected page; a clean control load was sent to sign-in' };
  }

  async #judgeWithDefinition(profileId: string, definition: SiteVerificationDefinition, load: LoadEvidence): Promise<VerificationResult> {
    const base = { method: 'definition' as const, definition: { id: definition.id, version: definition.version } };
    const judged = judgeWithDefinition(definition, load);
    if (judged.outcome !== 'signed_in') return { ...base, outcome: judged.outcome, detail: judged.why };
    if (definition.account === undefined) return { ...base, outcome: 'verified', detail: 'positive protected-state evidence' };
    const accountSha256 = sha256Hex(judged.account ?? '');
    const seal = await bindAccount(this.#options.profilesDir, profileId, definition.origin, accountSha256);
    if (seal === 'unreadable') return { ...base, outcome: 'not_verified', detail: 'the profile seal cannot be read' };
    if (seal === 'mismatch') return { ...base, outcome: 'account_mismatch', account_sha256: accountSha256, detail: 'another account than the sealed one' };
    return {
      ...base,
      outcome: 'verified',
      account_sha256: accountSha256,
      detail: seal === 'sealed' ? 'verified; account sealed' : 'verified; account matches the seal',
    };
  }
}

/** SHA-256 of `text` (UTF-8), lower-case hex. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * What a definition says about one protected load: `challenge` when a challenge predicate is
 * seen; `signed_in` (with the account evidence, when the definition shows one) on positive
 * protected-state evidence; otherwise `not_verified`, with the reason.
 */
export function judgeWithDefinition(
  definition: SiteVerificationDefinition,
  load: LoadEvidence,
): { outcome: 'signed_in'; account?: string } | { outcome: 'challenge' | 'not_verified'; why: string } {
  const page = { url: load.url, snapshot: load.snapshot };
  if (challengeSeen(definition, page)) return { outcome: 'challenge', why: 'a challenge predicate was seen' };
  if (httpOrigin(load.url) !== definition.origin.toLowerCase()) return { outcome: 'not_verified', why: 'the load left the origin' };
  if (new URL(load.url).pathname !== definition.protected_path) return { outcome: 'not_verified', why: 'the load did not end at the protected path' };
  if (load.signInWall !== false) return { outcome: 'not_verified', why: 'the page asks for sign-in (or that could not be checked)' };
  const missing = definition.signed_in.find((predicate) => !readPredicate(predicate, page).matched);
  if (missing !== undefined) return { outcome: 'not_verified', why: `signed-in evidence missing: ${missing.kind}` };
  if (definition.account === undefined) return { outcome: 'signed_in' };
  const account = accountEvidence(load.snapshot, definition.account.text_prefix);
  if (account === undefined) return { outcome: 'not_verified', why: 'no single account is shown' };
  return { outcome: 'signed_in', account };
}

/**
 * The account evidence in a snapshot: the rendered text following `prefix` in the innermost nodes
 * whose text contains it, trimmed (at most 200 characters). Undefined when there is none, or
 * when different accounts are shown.
 */
export function accountEvidence(snapshot: string, prefix: string): string | undefined {
  const accounts = new Set<string>();
  const visit = (node: AriaNode): boolean => {
    const text = textOf(node);
    if (!text.includes(prefix)) return false;
    const inner = node.children.map(visit).some(Boolean);
    if (!inner) {
      const account = text
        .slice(text.indexOf(prefix) + prefix.length)
        .trim()
        .slice(0, MAX_ACCOUNT_CHARS);
      if (account !== '') accounts.add(account);
    }
    return true;
  };
  for (const root of parseAriaSnapshot(snapshot)) visit(root);
  return accounts.size === 1 ? [...accounts][0] : undefined;
}

/** True when the snapshot shows a generic challenge marker ({@link GENERIC_CHALLENGE_MARKERS}). */
export function genericChallengeSeen(snapshot: string): boolean {
  const text = [...walkAria(parseAriaSnapshot(snapshot))]
    .map((node) => `${node.name ?? ''} ${node.value ?? ''}`)
    .join(' ')
    .toLowerCase();
  return GENERIC_CHALLENGE_MARKERS.some((marker) => text.includes(marker));
}

/**
 * Whether a profile's load reached the protected page (differential verification): same origin,
 * same path, a successful status, no sign-in wall, no generic challenge marker.
 */
export function reachedProtected(load: LoadEvidence, protectedUrl: string): { ok: true } | { ok: false; why: string } {
  const wanted = new URL(protectedUrl);
  if (httpOrigin(load.url) !== wanted.origin) return { ok: false, why: 'left the origin' };
  if (new URL(load.url).pathname !== wanted.pathname) return { ok: false, why: 'left the protected path' };
  if (load.status !== undefined && load.status >= 400) return { ok: false, why: `status ${load.status}` };
  if (load.signInWall !== false) return { ok: false, why: 'the page asks for sign-in (or that could not be checked)' };
  if (genericChallengeSeen(load.snapshot)) return { ok: false, why: 'a challenge marker is shown' };
  return { ok: true };
}

/**
 * Whether a clean control load was sent to sign-in: wherever it ended, it is a sign-in wall by
 * the sign-in signal's evidence that asks for a credential itself (a password field, an
 * identifier-first form, ...; issue 17; see `credentialWall`).
 * Merely ending somewhere else proves nothing: a consent interstitial, a
 * first-visit welcome page or a user-agent redirect also move a clean browser elsewhere, and
 * would turn any cookie into "proof" of a session.
 */
export function sentToSignIn(load: LoadEvidence): boolean {
  return load.signInWall === true && load.credentialWall !== false;
}

/**
 * Loads `url` in `page` (up to the `load` event, then briefly for the network to go quiet) and
 * reads the evidence: final URL, status, AI-mode aria snapshot, whether it is a sign-in wall.
 * @throws HostError('navigation_failed') when the load fails; HostError('deadline_exceeded').
 */
async function loadForEvidence(deadline: Deadline, page: Page, url: string, catalog: SiteCatalog): Promise<LoadEvidence> {
  const load = deadline.child(Math.min(LOAD_MS, deadline.remainingMs()));
  let status: number | undefined;
  const trail: string[] = [];
  try {
    const response = await load.race(page.goto(url, { waitUntil: 'load', timeout: Math.max(1, load.remainingMs()) }));
    status = response?.status();
    for (let request = response?.request() ?? null; request !== null; request = request.redirectedFrom()) trail.unshift(request.url());
  } catch (error) {
    if (error instanceof HostError) throw error;
    throw new HostError('navigation_failed', `the verification load of ${url} failed: ${firstLineOf(error)}`);
  } finally {
    load.dispose();
  }
  const quiet = deadline.child(Math.min(QUIET_MS, deadline.remainingMs() / 3));
  try {
    await quiet.race(page.waitForLoadState('networkidle', { timeout: Math.max(1, quiet.remainingMs()) }));
  } catch {
    // Still busy: read what is there.
  } finally {
    quiet.dispose();
  }
  const snapshot = await deadline.race(page.ariaSnapshot({ mode: 'ai', timeout: Math.max(1, deadline.remainingMs()) }));
  const userAgent = await browserUserAgent(deadline, page);
  const title = await deadline.race(page.title()).catch(() => '');
  const seen = await signInWallSeen(deadline, page, { url: page.url(), title, snapshot, trail: { urls: trail, status } }, catalog);
  return { url: page.url(), status, snapshot, signInWall: seen.wall, credentialWall: seen.credential, ...(userAgent ? { userAgent } : {}) };
}

/** Longest user agent a control browser is given, in characters. */
const MAX_USER_AGENT_CHARS = 512;

/**
 * The browser's own user agent (CDP `Browser.getVersion`), never one the page's scripts could
 * rewrite (`navigator.userAgent` runs in the page's world); at most 512 characters.
 */
async function browserUserAgent(deadline: Deadline, page: Page): Promise<string | undefined> {
  try {
    return await withCdpSession(deadline, page, async (session) => {
      const { userAgent } = (await deadline.race(session.send('Browser.getVersion'))) as { userAgent: string };
      return typeof userAgent === 'string' ? userAgent.slice(0, MAX_USER_AGENT_CHARS) : undefined;
    });
  } catch {
    return undefined;
  }
}

/** Runs `use` on a temporary page of the profile's context; the page is closed afterwards (bounded). */
async function withTemporaryPage<T>(deadline: Deadline, browser: ProfileBrowser, use: (page: Page) => Promise<T>): Promise<T> {
  const page = await browser.temporaryPage(deadline);
  try {
    return await use(page);
  } finally {
    await Deadline.waitAtMost(CLEANUP_MS, page.close());
  }
}

/** Runs `use` on the page of a fresh control browser; the browser and its directory are removed afterwards. */
async function withControlBrowser<T>(
  deadline: Deadline,
  options: LaunchOptions,
  userAgent: string | undefined,
  origins: readonly string[],
  use: (page: Page) => Promise<T>,
): Promise<T> {
  const control: ControlBrowser = await launchControlBrowser(deadline, options, userAgent, origins);
  try {
    const page = control.context.pages()[0] ?? (await deadline.race(control.context.newPage()));
    page.on('dialog', (dialog) => void dialog.dismiss().catch(() => {}));
    return await use(page);
  } finally {
    await Deadline.waitAtMost(CLEANUP_MS, control.close());
  }
}
