/**
 * URLs as the policy compares them (README "Taint"): whether a navigation target was read off a
 * page is decided on canonical URLs, never on the strings as written, so `HTTP://A/target`,
 * `http://a:80/target?`, `http://a/target#x`, `http://a/%74arget` and a relative `/target` on a
 * page of `http://a` are all the one URL `http://a/target`.
 */

/** Most URLs one observation records as shown by its page; past that it records {@link ANY_URL_SHOWN}. */
export const MAX_SHOWN_URLS = 2048;
/**
 * Recorded instead of the rest when a page showed more than {@link MAX_SHOWN_URLS} URLs: every
 * navigation of that turn counts as page-derived, so a page cannot push a URL out of the record
 * with decoys.
 */
export const ANY_URL_SHOWN = '*';

/**
 * Absolute http(s) URLs written in page text, as WHATWG reads them (slashes or backslashes after
 * the scheme, or none), up to whitespace, quotes or angle brackets.
 */
const URL_IN_TEXT = /https?:[^\s"'<>`]+/gi;
/** A link target line of an AI-mode aria snapshot: `- /url: <href>` (the raw attribute). */
const LINK_TARGET = /^\s*- \/url: (.+)$/gm;
/** What may end a sentence rather than a URL: such a URL is recorded with and without it. */
const TRAILING_PUNCTUATION = /[.,;:!?)\]]+$/;
/** A percent-encoded unreserved character (RFC 3986): the same URL as the character itself. */
const ENCODED_UNRESERVED = /%(2[dDeE]|3[0-9]|4[1-9a-fA-F]|5[0-9aA]|5[fF]|6[1-9a-fA-F]|7[0-9aA]|7[eE])/g;

/**
 * The WHATWG-parsed form of `raw` (trimmed), resolved against `base` when given: lower-case
 * scheme and host, default port dropped, an empty query (`?` alone) dropped; the fragment kept.
 * What the edge sends the host to navigate to. Undefined when it does not parse.
 */
export function navigationHref(raw: string, base?: string): string | undefined {
  let url: URL;
  try {
    url = base === undefined ? new URL(raw.trim()) : new URL(raw.trim(), base);
  } catch {
    return undefined;
  }
  // Assigning '' leaves no `?`; the fragment, if any, stays.
  if (url.search === '') url.search = '';
  return url.href;
}

/**
 * The canonical form of an http(s) URL for the page-derived check: {@link navigationHref}
 * without its fragment (the fragment names a place in the same document), percent-encoded
 * unreserved characters decoded. Undefined for anything that does not parse or is not http(s).
 */
export function canonicalPageUrl(raw: string, base?: string): string | undefined {
  const href = navigationHref(raw, base);
  if (href === undefined) return undefined;
  const url = new URL(href);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  url.hash = '';
  const decoded = (part: string): string => part.replace(ENCODED_UNRESERVED, (_match, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  url.pathname = decoded(url.pathname);
  if (url.search !== '') url.search = decoded(url.search);
  return url.href;
}

/** A YAML scalar of the snapshot as written: double-quoted ones unquoted (JSON escapes, and YAML's `\xNN`). */
function unquoted(value: string): string {
  if (!value.startsWith('"')) return value;
  try {
    const parsed: unknown = JSON.parse(value.replace(/\\x([0-9a-fA-F]{2})/g, '\\u00$1'));
    return typeof parsed === 'string' ? parsed : value;
  } catch {
    return value;
  }
}

/** What an observation shows the agent, as far as {@link shownUrlsOf} reads it. */
export interface ShownContent {
  readonly url: string;
  readonly title?: string;
  readonly snapshot: string;
  readonly frames?: readonly { readonly origin: string }[];
  readonly dialogs?: readonly { readonly message: string }[];
}

/**
 * The URLs an observation's page content showed, in canonical form ({@link canonicalPageUrl}),
 * distinct, the page's own URL left out: each link target of its snapshot (`/url:` lines,
 * resolved against the page's URL and against each of its frames' origins, since a frame's
 * relative link is its document's) and each absolute http(s) URL in its snapshot text, its title
 * and its dialogs' messages (with and without trailing punctuation, as written and with the
 * snapshot's YAML escapes undone). Past {@link MAX_SHOWN_URLS} the record ends with
 * {@link ANY_URL_SHOWN}. Only these are page-derived; the agent's own navigation targets never are.
 */
export function shownUrlsOf(observation: ShownContent): string[] {
  const own = canonicalPageUrl(observation.url);
  const shown = new Set<string>();
  let overflow = false;
  const add = (raw: string, base?: string): void => {
    const canonical = canonicalPageUrl(raw, base);
    if (canonical === undefined || canonical === own || shown.has(canonical)) return;
    if (shown.size >= MAX_SHOWN_URLS) overflow = true;
    else shown.add(canonical);
  };
  const bases = [observation.url, ...(observation.frames ?? []).map((frame) => frame.origin).filter((origin) => origin !== 'null')];
  for (const match of observation.snapshot.matchAll(LINK_TARGET)) {
    const target = unquoted((match[1] as string).trim());
    for (const base of bases) add(target, base);
  }
  const texts = [
    observation.snapshot,
    observation.snapshot.replace(/\\(["\\])/g, '$1'),
    observation.title ?? '',
    ...(observation.dialogs ?? []).map((dialog) => dialog.message),
  ];
  for (const text of texts) {
    for (const match of text.matchAll(URL_IN_TEXT)) {
      add(match[0]);
      add(match[0].replace(TRAILING_PUNCTUATION, ''));
    }
  }
  return overflow ? [...shown, ANY_URL_SHOWN] : [...shown];
}
