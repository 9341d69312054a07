import { jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import { PlacementGrant } from './fleet.ts';
import { Observation } from './observation.ts';
import { Origin } from './origin.ts';
import { Predicate } from './predicate.ts';
import { WireDownload, WireScreenshot } from './run-files.ts';
import { SignInWordAdditions } from './sign-in-words.ts';
import { MAX_URL_LENGTH } from './tool-arguments.ts';

/**
 * Authentication waits and verified resumption (ADR-0164 parts 2-4, DESIGN.md section 8): the
 * contracts the browser host and the edge share.
 *
 * - A site verification definition is trusted, versioned, declarative data the host operator
 *   installs (no scripts, credentials or permission exemptions). It ships disabled; an entry is
 *   enabled only with the reviewed fixture that justifies it.
 * - The host flags an observation whose page asks for sign-in (`sign_in`, wire only: the edge
 *   removes it before anything reaches an agent).
 * - A ceremony is the owner's native sign-in in the host's headed browser for one profile and
 *   origin, at one generation. Its verified outcome travels as a signed event token (HS256 over
 *   the host's shared secret), both in the host's callback and in `ceremony.status` answers, so
 *   the edge checks one thing whichever way the event arrived.
 */

/** Identifier the edge gives one ceremony generation of one sign-in episode. */
export const CeremonyId = z.string().regex(/^cer_[A-Za-z0-9_-]{8,64}$/);

const AbsolutePath = z.string().regex(/^\/[^\s]{0,1023}$/, 'a path starting with /');

/**
 * A site verification definition (ADR-0164 part 2). Positive protected-state evidence: loading
 * `protected_path` in the profile must end at that exact path and show every `signed_in`
 * predicate. Any `challenge` predicate seen means a challenge, never a sign-in. `account`, when
 * given, names where the account is shown: the rendered text that follows `text_prefix`
 * (e.g. "Signed in as ") is the account evidence bound to the sealed profile.
 * `enabled: true` requires `reviewed_fixture`, the reviewed fixture that justifies the entry.
 */
export const SiteVerificationDefinition = z
  .strictObject({
    id: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/),
    version: z.int().min(1),
    enabled: z.boolean(),
    reviewed_fixture: z.string().min(1).max(200).optional(),
    origin: Origin,
    sign_in_path: AbsolutePath,
    protected_path: AbsolutePath,
    signed_in: z.array(Predicate).min(1).max(8),
    challenge: z.array(Predicate).max(8).default([]),
    account: z.strictObject({ text_prefix: z.string().min(1).max(100) }).optional(),
    /**
     * Origins of the identity providers this site sends people to for sign-in (issue 17): a page
     * there counts as sign-in evidence (`identity_provider`) while the definition is enabled.
     */
    identity_providers: z.array(Origin).max(8).default([]),
  })
  .refine((d) => !d.enabled || d.reviewed_fixture !== undefined, {
    message: 'an enabled definition names the reviewed fixture that justifies it',
    path: ['reviewed_fixture'],
  });
export type SiteVerificationDefinition = z.infer<typeof SiteVerificationDefinition>;

/**
 * A catalog file: `{definitions: [...], sign_in_words?: {...}}`: at most 256 definitions, unique
 * by (id, version), and the phrases the operator adds to the sign-in word lists (see
 * shared/sign-in-words.ts).
 */
export const SiteVerificationCatalog = z.strictObject({
  definitions: z
    .array(SiteVerificationDefinition)
    .max(256)
    .refine((list) => new Set(list.map((d) => `${d.id}@${d.version}`)).size === list.length, 'duplicate id and version'),
  sign_in_words: SignInWordAdditions.optional(),
});
export type SiteVerificationCatalog = z.infer<typeof SiteVerificationCatalog>;

/**
 * One piece of evidence that a page asks for sign-in (issue 17), as the owner reads it on the wait:
 * - `definition`: an enabled definition's sign-in path, or one of its challenge predicates;
 * - `identity_provider`: the page is on an identity provider an enabled definition names;
 * - `password_field`: a visible password field (open or closed shadow roots included);
 * - `identifier_form`: a visible identifier field (`type=email`, `autocomplete` username, email or
 *   webauthn) in a form whose heading, title or submit button reads as sign-in;
 * - `passkey`: a passkey prompt: a field offering passkeys (`autocomplete` webauthn) or a button
 *   or link naming a passkey or security key;
 * - `single_sign_on`: buttons or links offering single sign-on ("Continue with ...");
 * - `sign_in_heading`: the page's title or main heading reads as sign-in;
 * - `redirected_with_return_url`: the document the call asked for was sent to another path whose
 *   query carries the requested URL back (`next`, `returnTo`, `RelayState`, ...);
 * - `unauthorized`: the document answered HTTP 401.
 * `detail` says what was seen, in at most 200 characters.
 */
export const SignInReasonCode = z.enum([
  'definition',
  'identity_provider',
  'password_field',
  'identifier_form',
  'passkey',
  'single_sign_on',
  'sign_in_heading',
  'redirected_with_return_url',
  'unauthorized',
]);
export type SignInReasonCode = z.infer<typeof SignInReasonCode>;

/** One reason on a sign-in wait: `{code, detail}`, the detail at most 200 characters of what was seen. */
export const SignInReason = z.strictObject({ code: SignInReasonCode, detail: z.string().max(200) });
export type SignInReason = z.infer<typeof SignInReason>;

/**
 * The host's sign-in signal on an observation: the page at `origin` asks for sign-in. `reasons`
 * are the pieces of evidence that decided it (see browser-host
 * `site-verification/sign-in-evidence.ts` for how they combine); `definition` is set when an
 * enabled definition decided it. `requested_url`: the document the call asked for, when a
 * redirect (by the server or the page) took it to this sign-in page.
 */
export const SignInSignal = z.strictObject({
  origin: Origin,
  reasons: z.array(SignInReason).min(1).max(12),
  definition: z.strictObject({ id: z.string(), version: z.int().min(1) }).optional(),
  requested_url: z.string().max(MAX_URL_LENGTH).optional(),
});
export type SignInSignal = z.infer<typeof SignInSignal>;

/** What `page.navigate`, `page.observe` and `page.act` answer on the wire: an observation, plus the sign-in signal. */
export const HostObservation = Observation.omit({ screenshot: true, downloads: true }).extend({
  sign_in: SignInSignal.optional(),
  /** 1.5.0, wire form of `screenshot`: the JPEG itself; the edge keeps it as an artifact and shows the agent {@link Observation}'s form. */
  viewport_jpeg: WireScreenshot.optional(),
  /** 1.5.0, wire form of `downloads`: by host id; the edge reads each saved one (`page.download`) into the run's artifacts. */
  downloaded_files: z.array(WireDownload).max(32).optional(),
});
export type HostObservation = z.infer<typeof HostObservation>;

/**
 * Splits the wire-only parts from the observation an agent may see: the sign-in signal, and the
 * screenshot and downloads in their wire forms (1.5.0), which the edge turns into artifacts
 * before it adds their agent forms to the observation.
 */
export function splitSignIn(wire: HostObservation): {
  observation: Observation;
  signIn: SignInSignal | undefined;
  screenshot: WireScreenshot | undefined;
  downloads: WireDownload[] | undefined;
} {
  const { sign_in, viewport_jpeg, downloaded_files, ...observation } = wire;
  return { observation, signIn: sign_in, screenshot: viewport_jpeg, downloads: downloaded_files };
}

/**
 * How a ceremony ended, as the host verified it:
 * - `verified`: positive protected-state evidence in the profile (definition), or the profile's
 *   protected load reached the page while a clean control load was sent to sign-in (differential);
 *   account evidence, when the definition has any, matches the profile's seal;
 * - `challenge`: a challenge page was seen; never counts as signed in;
 * - `account_mismatch`: signed in, but as another account than the one the profile is sealed to;
 * - `not_verified`: no positive evidence within the ceremony's time (a planted cookie without a
 *   session ends here: cookie presence is never proof);
 * - `ended`: the edge ended the ceremony before an outcome.
 */
export const CeremonyOutcome = z.enum(['verified', 'challenge', 'account_mismatch', 'not_verified', 'ended']);
export type CeremonyOutcome = z.infer<typeof CeremonyOutcome>;

/** The state of a ceremony as the host knows it; `unknown` when it has no record (e.g. restarted). */
export const CeremonyState = z.enum(['unknown', 'awaiting_person', 'verifying', ...CeremonyOutcome.options]);
export type CeremonyState = z.infer<typeof CeremonyState>;

/** Most origins one ceremony's record of where the person's window went keeps (the newest). */
export const MAX_VISITED_ORIGINS = 32;
/**
 * Most characters those origins hold together: the signed event carrying them must fit the
 * wire's 4,096-character token (`ceremony.status`, the delivery to the edge).
 */
export const MAX_VISITED_ORIGINS_CHARS = 1_024;

/**
 * Where a person's sign-in window went (`CeremonyEventClaims.visited_origins`): origins in order,
 * never the same one twice in a row, at most {@link MAX_VISITED_ORIGINS} of them and
 * {@link MAX_VISITED_ORIGINS_CHARS} characters in all.
 */
export const VisitedOrigins = z
  .array(Origin)
  .max(MAX_VISITED_ORIGINS)
  .refine((origins) => origins.every((origin, index) => index === 0 || origins[index - 1] !== origin), 'the same origin twice in a row')
  .refine((origins) => origins.join('').length <= MAX_VISITED_ORIGINS_CHARS, `more than ${MAX_VISITED_ORIGINS_CHARS} characters of origins`);

/** The claims of a signed ceremony outcome event. `event_id` is stable across re-deliveries. */
export const CeremonyEventClaims = z.strictObject({
  event_id: z.string().regex(/^cev_[A-Za-z0-9_-]{8,64}$/),
  ceremony_id: CeremonyId,
  host_id: z.string().min(1).max(128),
  /** The host profile id (the trusted profile binding), as in `lease.acquire`. */
  profile_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  origin: Origin,
  generation: z.int().min(1),
  outcome: CeremonyOutcome,
  method: z.enum(['definition', 'differential', 'none']),
  definition: z.strictObject({ id: z.string(), version: z.int().min(1) }).optional(),
  /** SHA-256 hex of the account evidence, when the definition shows an account. */
  account_sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /** Epoch ms at which the host decided the outcome. */
  decided_at_ms: z.int().min(0),
  /**
   * Where the person's window went during the ceremony (DESIGN.md section 18): the origins of
   * its top-level documents in order, a repeat of the one before folded, origins only (never a
   * path or query), the newest {@link MAX_VISITED_ORIGINS}. Absent from hosts that do not record it.
   */
  visited_origins: VisitedOrigins.optional(),
});
export type CeremonyEventClaims = z.infer<typeof CeremonyEventClaims>;

/** Lifetime of one signing of an event token, in seconds; a later status answer signs it again. */
export const CEREMONY_EVENT_TTL_S = 600;

const CEREMONY_EVENT_TYPE = 'ceremony-outcome';
const CEREMONY_EVENT_AUDIENCE = 'edge-ceremony-events';

function ceremonyKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/**
 * Signs `claims` as a ceremony event token from the host to the edge (HS256, `iss` browser-host,
 * `aud` edge-ceremony-events, `typ` ceremony-outcome): its own audience and type, so it can never
 * pass as a wire hello or frame token (shared/wire-auth.ts), nor they as it.
 */
export async function signCeremonyEvent(secret: string, claims: CeremonyEventClaims): Promise<string> {
  return new SignJWT({ ...claims, typ: CEREMONY_EVENT_TYPE })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer('browser-host')
    .setAudience(CEREMONY_EVENT_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(`${CEREMONY_EVENT_TTL_S}s`)
    .sign(ceremonyKey(secret));
}

/**
 * The claims of a ceremony event token when it was signed with `secret` by a browser host for the
 * edge, is current and well-formed; otherwise undefined. Never throws for a bad token.
 */
export async function verifyCeremonyEvent(secret: string, token: string): Promise<CeremonyEventClaims | undefined> {
  try {
    const { payload } = await jwtVerify(token, ceremonyKey(secret), {
      issuer: 'browser-host',
      audience: CEREMONY_EVENT_AUDIENCE,
      algorithms: ['HS256'],
      // Host and edge clocks are set independently; half a minute of skew must not lose an event.
      clockTolerance: 30,
      requiredClaims: ['iat', 'exp'],
      maxTokenAge: `${CEREMONY_EVENT_TTL_S + 30}s`,
    });
    if (payload.typ !== CEREMONY_EVENT_TYPE) return undefined;
    const { iss: _iss, aud: _aud, iat: _iat, exp: _exp, typ: _typ, ...claims } = payload;
    const parsed = CeremonyEventClaims.safeParse(claims);
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Longest a person is given to sign in during one ceremony, in ms (30 minutes). */
export const MAX_CEREMONY_MS = 30 * 60_000;

/** Wire params and results of the ceremony methods (added to shared/protocol.ts `HOST_METHODS`). */
export const CEREMONY_METHODS = {
  /**
   * Opens the profile's sign-in surface for `origin` at `generation`: interrupts any lease on the
   * profile (`lease_lost` for its next command), first checks whether the profile already holds a
   * valid session (then `verified` with the event at once: valid sessions are reused), otherwise
   * shows `sign_in_url` in the headed browser and verifies in the background until an outcome or
   * `timeout_ms`. A begin for a ceremony already known answers its current state. `protected_url`
   * is on `origin`; `sign_in_url` may be on another origin (an identity provider).
   */
  'ceremony.begin': {
    params: z.strictObject({
      ceremony_id: CeremonyId,
      profile_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
      origin: Origin,
      generation: z.int().min(1),
      sign_in_url: z.string().min(1).max(MAX_URL_LENGTH),
      protected_url: z.string().min(1).max(MAX_URL_LENGTH),
      timeout_ms: z.int().min(1_000).max(MAX_CEREMONY_MS),
      /** The profile's placement on this host (shared/fleet.ts), as with `lease.acquire`. */
      placement: PlacementGrant.optional(),
    }),
    result: z.strictObject({ ceremony_id: CeremonyId, state: CeremonyState, event: z.string().max(4096).optional() }),
  },
  /** The ceremony's state and, once it has an outcome, the signed event (re-signed, same event id). */
  'ceremony.status': {
    params: z.strictObject({ ceremony_id: CeremonyId }),
    result: z.strictObject({ ceremony_id: CeremonyId, state: CeremonyState, event: z.string().max(4096).optional() }),
  },
  /** Ends a ceremony nobody waits for any more (its runs were fenced); `{ended}` false when unknown or already over. */
  'ceremony.end': {
    params: z.strictObject({ ceremony_id: CeremonyId }),
    result: z.strictObject({ ended: z.boolean() }),
  },
} as const;

/** What the host POSTs to the edge's `/v1/host/ceremony-events`: one signed event. */
export const CeremonyEventDelivery = z.strictObject({ event: z.string().min(1).max(4096) }).meta({
  // Only a host holding the shared secret can make a real one; this one is refused (401).
  examples: [{ event: 'eyJhbGciOiJIUzI1NiJ9.eyJldmVudF9pZCI6ImNldl9leGFtcGxlIn0.c2lnbmF0dXJl' }],
});
export type CeremonyEventDelivery = z.infer<typeof CeremonyEventDelivery>;
