/**
 * URLs as the policy compares them (README "Taint"): whether a navigation target was read off a
 * page is decided on canonical URLs, never on the strings as written, so `HTTP://A/target`,
 * `http://a:80/target?`, `http://a/target#x` and a relative `/target` on a page of `http://a`
 * are all the one URL `http://a/target`.
 */

/** Most URLs one observation records as shown by its page; any beyond are not recorded. */
export const MAX_SHOWN_URLS = 512;

/** Absolute http(s) URLs written in page text (up to whitespace, quotes, brackets or angle brackets). */
const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>()[\]{}`]+/gi;
/** A link target line of an AI-mode aria snapshot: `- /url: <href>`. */
const LINK_TARGET = /^\s*- \/url: (.+)$/gm;
/** What text usually ends a sentence with, not a URL: trailing punctuation is dropped. */
const TRAILING_PUNCTUATION = /[.,;:!?]+$/;

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
  if (url.search === '') url.search = '';
  // Assigning '' leaves no `?`; the fragment, if any, stays after it.
  return url.href;
}

/**
 * The canonical form of an http(s) URL for the page-derived check: {@link navigationHref}
 * without its fragment (the fragment names a place in the same document). Undefined for anything
 * that does not parse or is not http(s).
 */
export function canonicalPageUrl(raw: string, base?: string): string | undefined {
  const href = navigationHref(raw, base);
  if (href === undefined) return undefined;
  const url = new URL(href);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  url.hash = '';
  return url.href;
}

/** A YAML scalar of the snapshot as written: double-quoted ones (JSON escapes) unquoted. */
function unquoted(value: string): string {
  if (!value.startsWith('"')) return value;
  try {
    const parsed: unknown = JSON.parse(value);
    return typeof parsed === 'string' ? parsed : value;
  } catch {
    return value;
  }
}

/**
 * The URLs an observation's page content showed: each link target of its snapshot (`/url:`
 * lines, resolved against the page's URL) and each absolute http(s) URL in its text, in canonical
 * form ({@link canonicalPageUrl}), distinct, the page's own URL left out, at most
 * {@link MAX_SHOWN_URLS}. Only these are page-derived; the page's own URL and the agent's own
 * navigation targets never are.
 */
export function shownUrlsOf(observation: { readonly url: string; readonly snapshot: string }): string[] {
  const own = canonicalPageUrl(observation.url);
  const shown = new Set<string>();
  const add = (raw: string, base?: string): void => {
    if (shown.size >= MAX_SHOWN_URLS) return;
    const canonical = canonicalPageUrl(raw, base);
    if (canonical !== undefined && canonical !== own) shown.add(canonical);
  };
  for (const match of observation.snapshot.matchAll(LINK_TARGET)) add(unquoted((match[1] as string).trim()), observation.url);
  for (const match of observation.snapshot.matchAll(URL_IN_TEXT)) add(match[0].replace(TRAILING_PUNCTUATION, ''));
  return [...shown];
}
