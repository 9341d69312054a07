import { withinOrigins } from './origin.ts';

/**
 * Query parameters through which sign-in pages carry the page a person was after back to it
 * (issue 17; ADR-0164 part 3), compared without case and without `_` and `-`: the names the
 * common sign-in pages and identity providers use. One place, reviewed; extend it here.
 */
export const RETURN_URL_PARAMETERS: readonly string[] = [
  'return',
  'returnto',
  'returnurl',
  'returnpath',
  'next',
  'nexturl',
  'redirect',
  'redirectto',
  'redirecturl',
  'redirecturi',
  'continue',
  'continueto',
  'relaystate',
  'goto',
  'destination',
  'dest',
  'target',
  'targeturl',
  'from',
  'origin_url',
  'callbackurl',
  'successurl',
  'backurl',
].map((name) => name.replace(/[_-]/g, ''));

/** Longest return URL taken from a sign-in page, in characters. */
const MAX_RETURN_URL_LENGTH = 4_096;

/**
 * The page a sign-in page says the person was after: the first return parameter of
 * `signInUrl`'s query (see {@link RETURN_URL_PARAMETERS}) whose value, read as an absolute URL or
 * as a path on the sign-in page's origin, is an http(s) URL within `origins` (the run's) and is
 * not the sign-in page itself. Undefined when it carries none.
 */
export function returnUrlOf(signInUrl: string, origins: readonly string[]): string | undefined {
  let page: URL;
  try {
    page = new URL(signInUrl);
  } catch {
    return undefined;
  }
  for (const [name, value] of page.searchParams) {
    if (!RETURN_URL_PARAMETERS.includes(name.toLowerCase().replace(/[_-]/g, ''))) continue;
    if (value === '' || value.length > MAX_RETURN_URL_LENGTH) continue;
    let target: URL;
    try {
      target = new URL(value, page.origin);
    } catch {
      continue;
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') continue;
    if (target.username !== '' || target.password !== '') continue;
    if (target.origin === page.origin && target.pathname === page.pathname) continue;
    if (withinOrigins(target.href, origins)) return target.href;
  }
  return undefined;
}
