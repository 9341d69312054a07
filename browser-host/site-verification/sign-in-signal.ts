import type { Page } from 'playwright-core';
import type { SignInReason, SignInReasonCode, SignInSignal, SiteVerificationDefinition } from '../../shared/authentication.ts';
import { httpOrigin } from '../../shared/origin.ts';
import { readPredicate } from '../../shared/predicate-evaluation.ts';
import { MAX_URL_LENGTH } from '../../shared/tool-arguments.ts';
import type { Deadline } from '../deadline.ts';
import type { DocumentTrail } from '../page/traffic.ts';
import type { ElementCensus } from '../snapshot/element-census.ts';
import type { SiteCatalog } from './catalog.ts';
import { assessSignIn, trailReasons } from './sign-in-evidence.ts';

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

/** True when some challenge predicate of `definition` has a candidate in the snapshot. */
export function challengeSeen(definition: SiteVerificationDefinition, page: { url: string; snapshot: string }): boolean {
  return definition.challenge.some((predicate) => readPredicate(predicate, page).candidates > 0);
}

/**
 * The sign-in signal of a full capture (wire only; the edge strips it), or undefined when the page
 * is not a sign-in wall (issue 17; ADR-0164 part 3):
 * - an enabled definition for the page's origin whose sign-in path is the page's path, or one of
 *   whose challenge predicates the snapshot shows, decides it (reason `definition`, and the
 *   signal names the definition);
 * - otherwise the combined evidence of {@link assessSignIn} decides it, an identity provider an
 *   enabled definition names counting as one piece (`identity_provider`).
 * `trail`: the documents the call went through (for redirects and 401); the signal's
 * `requested_url` is the document the call asked for when a redirect took it here. Bounded by
 * `deadline`; a check that fails or runs out of time adds no evidence, never an error.
 */
export async function signInSignal(
  deadline: Deadline,
  page: Page,
  captured: { url: string; title: string; lines: readonly string[]; incomplete?: readonly string[]; census?: ElementCensus },
  catalog: SiteCatalog,
  trail?: DocumentTrail,
): Promise<SignInSignal | undefined> {
  return (await decideSignIn(deadline, page, captured, catalog, trail)).signal;
}

/** {@link signInSignal}, and whether the page could be read (`checked`: a "no" then means no wall). */
async function decideSignIn(
  deadline: Deadline,
  page: Page,
  captured: { url: string; title: string; lines: readonly string[]; incomplete?: readonly string[]; census?: ElementCensus },
  catalog: SiteCatalog,
  trail?: DocumentTrail,
): Promise<{ signal: SignInSignal | undefined; checked: boolean }> {
  const origin = httpOrigin(captured.url);
  if (origin === undefined) return { signal: undefined, checked: true };
  const definition = catalog.forOrigin(origin);
  if (definition !== undefined) {
    const onSignInPath = new URL(captured.url).pathname === definition.sign_in_path;
    if (onSignInPath || challengeSeen(definition, { url: captured.url, snapshot: captured.lines.join('\n') })) {
      const detail = onSignInPath ? `the sign-in page of site definition ${definition.id}` : `a challenge site definition ${definition.id} names`;
      const requested = trail === undefined ? undefined : trailReasons({ url: captured.url, trail }).requestedUrl;
      const signal: SignInSignal = {
        origin,
        reasons: [{ code: 'definition', detail }],
        definition: { id: definition.id, version: definition.version },
        ...(requested !== undefined ? { requested_url: requested } : {}),
      };
      return { signal, checked: true };
    }
  }
  const provider = catalog.identityProviderOf(origin);
  const known: SignInReason[] = provider === undefined ? [] : [{ code: 'identity_provider', detail: `an identity provider of site definition ${provider.id}` }];
  const assessment = await assessSignIn(
    deadline,
    page,
    {
      url: captured.url,
      title: captured.title,
      lines: captured.lines,
      ...(trail !== undefined ? { trail } : {}),
      closedShadowRoots: captured.incomplete?.includes('closed_shadow_root') === true,
      ...(captured.census !== undefined ? { census: captured.census } : {}),
    },
    catalog.words,
    known,
  );
  if (!assessment.wall) return { signal: undefined, checked: assessment.domRead };
  const signal: SignInSignal = {
    origin,
    reasons: assessment.reasons.slice(0, 12),
    ...(assessment.requestedUrl !== undefined && assessment.requestedUrl.length <= MAX_URL_LENGTH ? { requested_url: assessment.requestedUrl } : {}),
  };
  return { signal, checked: true };
}

/** Pieces that show the page asks for a credential itself (not only that it was reached by a redirect or is titled so). */
export const CREDENTIAL_REASONS: readonly SignInReasonCode[] = ['definition', 'password_field', 'identifier_form', 'passkey', 'single_sign_on', 'unauthorized'];

/**
 * Whether `page` (loaded at `url`, whose snapshot is `snapshot`) is a sign-in wall by the same
 * rules as {@link signInSignal}, for verification loads and the ceremony's surface: `wall` true or
 * false, or undefined when the page's DOM could not be read in time (then nothing is proven either
 * way); `credential` when the wall shows a credential prompt itself ({@link CREDENTIAL_REASONS}).
 * `trail`: the load's redirect chain and status, when known. Never throws.
 */
export async function signInWallSeen(
  deadline: Deadline,
  page: Page,
  seen: { url: string; title: string; snapshot: string; trail?: DocumentTrail },
  catalog: SiteCatalog,
): Promise<{ wall: boolean | undefined; credential: boolean }> {
  try {
    // Declarative closed roots are looked for too (one CDP read when no password field shows).
    const captured = { url: seen.url, title: seen.title, lines: seen.snapshot.split('\n'), incomplete: ['closed_shadow_root'] };
    const decided = await decideSignIn(deadline, page, captured, catalog, seen.trail);
    if (decided.signal === undefined) return { wall: decided.checked ? false : undefined, credential: false };
    return { wall: true, credential: decided.signal.reasons.some((reason) => CREDENTIAL_REASONS.includes(reason.code)) };
  } catch {
    return { wall: undefined, credential: false };
  }
}
