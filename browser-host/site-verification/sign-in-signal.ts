import type { Page } from 'playwright-core';
import type { SignInSignal, SiteVerificationDefinition } from '../../shared/authentication.ts';
import { originOf } from '../../shared/origin.ts';
import { readPredicate } from '../../shared/predicate-evaluation.ts';
import type { Deadline } from '../deadline.ts';
import type { SiteCatalog } from './catalog.ts';

/** Longest the password-field check may take, in ms; it is one DOM query. */
const PASSWORD_CHECK_MS = 1_000;
/** Below this much time left, in ms, the check is skipped: no time means no signal. */
const MIN_CHECK_MS = 50;

/**
 * True when the main frame of `page` shows a visible `input[type=password]` (open shadow roots
 * included, iframes not); undefined when that could not be found out within the deadline (at
 * most 1,000 ms). Never throws.
 */
export async function passwordFieldVisible(deadline: Deadline, page: Page): Promise<boolean | undefined> {
  if (deadline.remainingMs() < MIN_CHECK_MS) return undefined;
  const check = deadline.child(PASSWORD_CHECK_MS);
  try {
    const count = await check.race(page.locator('input[type=password]').filter({ visible: true }).count());
    return count > 0;
  } catch {
    return undefined;
  } finally {
    check.dispose();
  }
}

/** The origin of `url` when it is an http(s) URL, else undefined. */
export function httpOrigin(url: string): string | undefined {
  // The URL's own scheme must be http(s): a blob: URL, say, has the origin of its creator.
  const scheme = /^\s*([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  return scheme === 'http' || scheme === 'https' ? originOf(url) : undefined;
}

/** True when some challenge predicate of `definition` has a candidate in the snapshot. */
export function challengeSeen(definition: SiteVerificationDefinition, page: { url: string; snapshot: string }): boolean {
  return definition.challenge.some((predicate) => readPredicate(predicate, page).candidates > 0);
}

/**
 * The sign-in signal of a full capture (wire only; the edge strips it), or undefined:
 * - an enabled definition for the page's origin whose sign-in path is the page's path, or one of
 *   whose challenge predicates the snapshot shows: evidence `definition`;
 * - otherwise a visible password field in the main frame: evidence `password_field`.
 * Cheap (the snapshot is already read; at most one DOM query), bounded by `deadline`; a check
 * that fails or runs out of time means no signal, never an error.
 */
export async function signInSignal(
  deadline: Deadline,
  page: Page,
  captured: { url: string; lines: readonly string[] },
  catalog: SiteCatalog,
): Promise<SignInSignal | undefined> {
  const origin = httpOrigin(captured.url);
  if (origin === undefined) return undefined;
  const definition = catalog.forOrigin(origin);
  if (definition !== undefined) {
    const onSignInPath = new URL(captured.url).pathname === definition.sign_in_path;
    if (onSignInPath || challengeSeen(definition, { url: captured.url, snapshot: captured.lines.join('\n') })) {
      return { origin, evidence: 'definition', definition: { id: definition.id, version: definition.version } };
    }
  }
  return (await passwordFieldVisible(deadline, page)) === true ? { origin, evidence: 'password_field' } : undefined;
}
