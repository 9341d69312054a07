import type { Locator, Page } from 'playwright-core';
import { parseAriaSnapshotLines, textOf, walkReachable } from '../../shared/aria-snapshot.ts';
import type { SignInReason, SignInReasonCode } from '../../shared/authentication.ts';
import { canonicalPageUrl } from '../../shared/page-url.ts';
import { returnUrlOf } from '../../shared/sign-in-return.ts';
import { namesPasskey, namesSingleSignOn, readsAsSignIn, type SignInWords, signInReading } from '../../shared/sign-in-words.ts';
import type { Deadline } from '../deadline.ts';
import { withCdpSession } from '../page/cdp-session.ts';
import { attributeOf, type PiercedDomNode, walkPiercedDom } from '../page/pierced-dom.ts';
import type { DocumentTrail } from '../page/traffic.ts';
import { type ElementCensus, IDENTIFIER_FIELDS, PASSWORD_FIELDS } from '../snapshot/element-census.ts';

/**
 * The evidence that a page asks for sign-in, read from what a person sees (issue 17; ADR-0164
 * part 3), and how the pieces combine. Each piece becomes a {@link SignInReason} the owner reads
 * on the wait.
 *
 * A page is a sign-in wall when a *decisive* piece is seen (an enabled definition's sign-in path or
 * challenge; a visible password field) or when the pieces seen weigh at least
 * {@link WALL_WEIGHT}:
 * - weight 2: an identifier field in a form that reads as sign-in (`identifier_form`; already
 *   two things together: the field and the words), a field offering passkeys (`autocomplete`
 *   webauthn), a document answered 401 (`unauthorized`);
 * - weight 1: single-sign-on buttons, a button naming a passkey, a title or main heading that
 *   reads as sign-in, a redirect that carries the requested URL back, an identity provider's
 *   origin.
 * So a newsletter form (an email field, "Sign up"), a site search, a "Sign in" link in a public
 * header or a help article about signing in are not walls, while an identifier-first page
 * ("Sign in", an email field, "Next"), a page of only "Continue with ..." buttons under a
 * "Sign in" heading, or a passkey prompt are.
 */

/** Weight at which the pieces seen make a sign-in wall. */
export const WALL_WEIGHT = 2;

/** The weight of each piece (decisive pieces are `Infinity`). */
export const REASON_WEIGHTS: Readonly<Record<SignInReasonCode, number>> = {
  definition: Number.POSITIVE_INFINITY,
  password_field: Number.POSITIVE_INFINITY,
  identifier_form: 2,
  unauthorized: 2,
  passkey: 1,
  single_sign_on: 1,
  sign_in_heading: 1,
  redirected_with_return_url: 1,
  identity_provider: 1,
};

/** A field offering passkeys weighs as much as an identifier form: the page asks for a credential now. */
const PASSKEY_FIELD_WEIGHT = 2;

/** Headings as the host reads them around a field: the nearest one before it in document order. */
const NEAREST_HEADING = 'xpath=preceding::*[self::h1 or self::h2 or self::h3 or self::legend or @role="heading"][1]';
/** Most buttons read per identifier field's form. */
const MAX_BUTTONS = 8;
/** Most same-origin frames looked into for a password field. */
const MAX_FRAMES = 8;
/** Most identifier fields whose form is read. */
const MAX_IDENTIFIER_FIELDS = 4;
/** Most texts kept per kind in a reason's detail. */
const MAX_NAMED = 3;
/** Longest the DOM reads of one assessment may take, in ms. */
const DOM_READ_MS = 1_500;
/** Below this much time left, in ms, the DOM is not read: no time means no DOM evidence. */
const MIN_READ_MS = 50;

/** What the sign-in evidence of one page is read from. */
export interface PageUnderAssessment {
  /** The page's URL and document title. */
  readonly url: string;
  readonly title: string;
  /** The page's AI-mode aria snapshot lines (what a person sees). */
  readonly lines: readonly string[];
  /** The documents the call went through and the last one's HTTP status, when known. */
  readonly trail?: DocumentTrail;
  /** True when the capture knows of closed shadow roots it could not open (declarative ones). */
  readonly closedShadowRoots?: boolean;
  /** The capture's census (snapshot/element-census.ts): a field kind it counted none of is not looked for again. */
  readonly census?: Pick<ElementCensus, 'passwordFields' | 'identifierFields'>;
}

/** The pieces seen, whether they make a wall, and the document the call asked for (a redirect's start). */
export interface SignInAssessment {
  readonly wall: boolean;
  readonly reasons: readonly SignInReason[];
  /** The weight of the pieces seen (Infinity when one is decisive). */
  readonly weight: number;
  readonly requestedUrl: string | undefined;
  /** False when the DOM could not be read (no time left, or the read failed): a `false` wall then proves nothing. */
  readonly domRead: boolean;
}

/** What an identifier field's form says, read in the page. */
interface IdentifierForm {
  readonly kind: string;
  readonly webauthn: boolean;
  readonly headings: string[];
  readonly buttons: string[];
}

/**
 * Reads the sign-in evidence of `page` as it is now, beyond what a definition says (the caller
 * adds `definition` and `identity_provider` pieces it knows of as `known`): the snapshot's
 * headings, buttons and links (pure), the title, the trail, and a bounded DOM read (at most
 * 1,500 ms) of password fields (open and host-opened closed shadow roots by locator; declarative
 * closed roots by one CDP document read when the capture reports any) and identifier fields with
 * their forms. Never throws: a read that fails or runs out of time adds no piece.
 */
export async function assessSignIn(
  deadline: Deadline,
  page: Page,
  seen: PageUnderAssessment,
  words: SignInWords,
  known: readonly SignInReason[] = [],
): Promise<SignInAssessment> {
  const reasons: SignInReason[] = [...known];
  let extra = 0;
  let domRead = false;
  const read = deadline.remainingMs() >= MIN_READ_MS ? deadline.child(Math.min(DOM_READ_MS, deadline.remainingMs())) : undefined;
  try {
    const [password, forms] =
      read === undefined
        ? [false, []]
        : await Promise.all([passwordFieldSeen(read, page, seen.closedShadowRoots === true, seen.census), identifierForms(read, page, seen.census)]);
    if (password) reasons.push({ code: 'password_field', detail: 'a visible password field' });
    const titleReads = titleReadsAsSignIn(seen.title, words);
    const signInForm = forms.map((form) => ({ form, said: formSaysSignIn(form, words, titleReads) })).find((entry) => entry.said !== undefined);
    if (signInForm !== undefined) {
      reasons.push({
        code: 'identifier_form',
        detail: cut(`a visible ${signInForm.form.kind} field in a form that reads as sign-in (${JSON.stringify(signInForm.said)})`),
      });
    }
    const passkeyField = forms.find((form) => form.webauthn);
    if (passkeyField !== undefined) {
      reasons.push({ code: 'passkey', detail: 'a field offering passkeys (autocomplete webauthn)' });
      extra += PASSKEY_FIELD_WEIGHT - REASON_WEIGHTS.passkey;
    }
    domRead = read !== undefined;
  } catch {
    // No DOM evidence this time.
  } finally {
    read?.dispose();
  }
  reasons.push(...snapshotReasons(seen, words, passkeyAlready(reasons)));
  const trailed = trailReasons(seen);
  reasons.push(...trailed.reasons);
  const weight = reasons.reduce((sum, reason) => sum + REASON_WEIGHTS[reason.code], extra);
  const wall = weight >= WALL_WEIGHT;
  return { wall, reasons, weight, requestedUrl: wall ? trailed.requestedUrl : undefined, domRead };
}

/** A title reads as sign-in unless it merely names a single-sign-on choice ("Sign in with Apple - Apple Developer"). */
function titleReadsAsSignIn(title: string, words: SignInWords): boolean {
  return readsAsSignIn(title, words) && !namesSingleSignOn(title, words, true);
}

function passkeyAlready(reasons: readonly SignInReason[]): boolean {
  return reasons.some((reason) => reason.code === 'passkey');
}

/**
 * The pieces the snapshot and the title show (pure): single-sign-on buttons or links, a button or
 * link naming a passkey (unless `passkeySeen`), and a title or main heading (level 1 or 2) that
 * reads as sign-in. Nodes no person can reach (`[inert]`) do not count.
 */
export function snapshotReasons(seen: Pick<PageUnderAssessment, 'title' | 'lines'>, words: SignInWords, passkeySeen = false): SignInReason[] {
  const reasons: SignInReason[] = [];
  const singleSignOn: string[] = [];
  const passkeys: string[] = [];
  const headings: string[] = [];
  for (const node of walkReachable(parseAriaSnapshotLines(seen.lines))) {
    if (node.role === 'button' || node.role === 'link') {
      const name = (node.name ?? textOf(node)).trim();
      if (name === '') continue;
      // "Sign in with a passkey" is a passkey, not a single-sign-on choice.
      if (namesPasskey(name, words)) passkeys.push(name);
      // Any provider's name counts on a button only: a link saying "Sign in with ..." may lead to an article about it.
      else if (namesSingleSignOn(name, words, false, node.role === 'button')) singleSignOn.push(name);
    } else if (node.role === 'heading' && Number(node.attributes.level ?? '2') <= 2) {
      const name = (node.name ?? textOf(node)).trim();
      // "Sign in with Apple" names a choice (or its documentation), not a sign-in page.
      if (name !== '' && readsAsSignIn(name, words) && !namesSingleSignOn(name, words, true)) headings.push(name);
    }
  }
  if (singleSignOn.length > 0) reasons.push({ code: 'single_sign_on', detail: cut(`single-sign-on choices ${quoted(singleSignOn)}`) });
  if (passkeys.length > 0 && !passkeySeen) reasons.push({ code: 'passkey', detail: cut(`a passkey choice ${quoted(passkeys)}`) });
  if (titleReadsAsSignIn(seen.title, words)) {
    reasons.push({ code: 'sign_in_heading', detail: cut(`the title ${JSON.stringify(seen.title)}`) });
  } else if (headings.length > 0) reasons.push({ code: 'sign_in_heading', detail: cut(`the heading ${quoted(headings)}`) });
  return reasons;
}

/**
 * The pieces the trail shows (pure): `unauthorized` when the last document answered 401;
 * `redirected_with_return_url` when the page's return URL (see shared/sign-in-return.ts) is a
 * document the call went through, on another path. `requestedUrl`: that document, else the first
 * http(s) document of the trail on another path than the page (a redirect without a return URL).
 */
export function trailReasons(seen: Pick<PageUnderAssessment, 'url' | 'trail'>): { reasons: SignInReason[]; requestedUrl: string | undefined } {
  const reasons: SignInReason[] = [];
  const trail = seen.trail;
  if (trail === undefined) return { reasons, requestedUrl: undefined };
  if (trail.status === 401) reasons.push({ code: 'unauthorized', detail: 'the page answered HTTP 401' });
  const here = canonicalPageUrl(seen.url);
  const visited = trail.urls.filter((url) => canonicalPageUrl(url) !== undefined && canonicalPageUrl(url) !== here);
  const origins = [...new Set(visited.map((url) => new URL(url).origin))];
  const back = returnUrlOf(seen.url, origins);
  const returned = back === undefined ? undefined : visited.find((url) => canonicalPageUrl(url) === canonicalPageUrl(back));
  if (returned !== undefined) {
    reasons.push({ code: 'redirected_with_return_url', detail: cut(`${pathOf(returned)} was sent to ${pathOf(seen.url)}, which carries it back`) });
    return { reasons, requestedUrl: returned };
  }
  return { reasons, requestedUrl: visited.find((url) => pathKey(url) !== pathKey(seen.url)) };
}

/** True when a visible password field is in the main frame or a same-origin frame: by locator, then (when there are declarative closed roots) by CDP. */
async function passwordFieldSeen(deadline: Deadline, page: Page, closedRoots: boolean, census: PageUnderAssessment['census']): Promise<boolean> {
  const count = census?.passwordFields === 0 ? 0 : await deadline.race(page.locator(PASSWORD_FIELDS).filter({ visible: true }).count()).catch(() => 0);
  if (count > 0 || (await framedPasswordField(deadline, page))) return true;
  return closedRoots ? closedRootPasswordField(deadline, page) : false;
}

/**
 * What a form says about signing in: the text that reads as sign-in among its nearest heading and
 * its buttons, or undefined. A clear sign-in phrase counts alone; an ambiguous one ("Anmelden",
 * "Entrar") only with a second sign: another of its texts, or the page title, reads as sign-in.
 */
function formSaysSignIn(form: IdentifierForm, words: SignInWords, titleReads: boolean): string | undefined {
  const texts = [...form.headings, ...form.buttons].filter((text) => !namesSingleSignOn(text, words, true));
  const readings = texts.map((text) => ({ text, reading: signInReading(text, words) })).filter((entry) => entry.reading !== undefined);
  const clear = readings.find((entry) => entry.reading === 'clear');
  if (clear !== undefined) return clear.text;
  return readings.length >= 2 || (readings.length === 1 && titleReads) ? readings[0]?.text : undefined;
}

/**
 * The forms of the first visible identifier fields (at most 4), read with Playwright's own
 * (isolated-world) queries, never in the page's world: a page's scripts can neither hang nor fool
 * the read. For each field: its kind and `autocomplete`, its nearest heading before it in document
 * order, and the buttons of its form (or, without a form element, of its third ancestor).
 */
async function identifierForms(deadline: Deadline, page: Page, census: PageUnderAssessment['census']): Promise<IdentifierForm[]> {
  if (census?.identifierFields === 0) return [];
  const fields: Locator = page.locator(IDENTIFIER_FIELDS).filter({ visible: true });
  const count = Math.min(await deadline.race(fields.count()), MAX_IDENTIFIER_FIELDS);
  const forms = await Promise.all(Array.from({ length: count }, (_, index) => identifierFormOf(deadline, fields.nth(index)).catch(() => undefined)));
  return forms.filter((form): form is IdentifierForm => form !== undefined);
}

async function identifierFormOf(deadline: Deadline, field: Locator): Promise<IdentifierForm> {
  const timeout = Math.max(1, deadline.remainingMs());
  const [type, autocomplete] = await deadline.race(Promise.all([field.getAttribute('type', { timeout }), field.getAttribute('autocomplete', { timeout })]));
  const tokens = (autocomplete ?? '').toLowerCase().split(/\s+/);
  const kind = type?.toLowerCase() === 'email' || tokens.includes('email') ? 'email' : tokens.includes('username') ? 'username' : 'identifier';
  const form = field.locator('xpath=ancestor::form[1]');
  const scope = (await deadline.race(form.count())) > 0 ? form : field.locator('xpath=ancestor::*[3]');
  const heading = field.locator(NEAREST_HEADING);
  const buttons = scope.locator('button, input[type=submit], input[type=button], [role=button]');
  // innerText, not textContent: what a person sees (Playwright reads it in its own world).
  const [headingText, buttonCount] = await deadline.race(
    Promise.all([heading.count().then((n) => (n > 0 ? heading.innerText({ timeout }) : '')), buttons.count()]),
  );
  const buttonTexts = await deadline.race(
    Promise.all(
      Array.from({ length: Math.min(buttonCount, MAX_BUTTONS) }, async (_, index) => {
        const button = buttons.nth(index);
        const value = await button.getAttribute('value', { timeout });
        return value || (await button.innerText({ timeout }));
      }),
    ),
  );
  const clean = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 160);
  return { kind, webauthn: tokens.includes('webauthn'), headings: [clean(headingText)].filter(Boolean), buttons: buttonTexts.map(clean).filter(Boolean) };
}

/** True when a same-origin frame of the page (at most 8) shows a visible password field. */
async function framedPasswordField(deadline: Deadline, page: Page): Promise<boolean> {
  const main = page.mainFrame();
  let origin: string;
  try {
    origin = new URL(main.url()).origin;
  } catch {
    return false;
  }
  const frames = page
    .frames()
    .filter((frame) => frame !== main && URL.canParse(frame.url()) && new URL(frame.url()).origin === origin)
    .slice(0, MAX_FRAMES);
  const counts = await Promise.all(
    frames.map((frame) => deadline.race(frame.locator('input[type=password]').filter({ visible: true }).count()).catch(() => 0)),
  );
  return counts.some((count) => count > 0);
}

/** A visible `input[type=password]` inside a closed shadow root of the main document (one CDP read). */
async function closedRootPasswordField(deadline: Deadline, page: Page): Promise<boolean> {
  try {
    return await withCdpSession(deadline, page, async (session) => {
      const { root } = (await deadline.race(session.send('DOM.getDocument', { depth: -1, pierce: true }))) as { root: PiercedDomNode };
      const found: number[] = [];
      walkPiercedDom(root, (node, insideClosedRoot) => {
        if (insideClosedRoot && node.nodeName === 'INPUT' && attributeOf(node, 'type')?.toLowerCase() === 'password') found.push(node.nodeId);
        return found.length < MAX_IDENTIFIER_FIELDS;
      });
      for (const nodeId of found) {
        const box = (await deadline.race(session.send('DOM.getBoxModel', { nodeId })).catch(() => undefined)) as
          | { model?: { width: number; height: number } }
          | undefined;
        if (box?.model !== undefined && box.model.width > 0 && box.model.height > 0) return true;
      }
      return false;
    });
  } catch {
    return false;
  }
}

function pathKey(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

function pathOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
}

function quoted(texts: readonly string[]): string {
  return texts
    .slice(0, MAX_NAMED)
    .map((text) => JSON.stringify(text.slice(0, 60)))
    .join(', ');
}

function cut(text: string): string {
  return text.length <= 200 ? text : `${text.slice(0, 199)}…`;
}
