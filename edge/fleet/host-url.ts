/**
 * The one canonical form of a browser host's wire URL (issue 32), shared by `HOST_URLS` and
 * `POST /v1/hosts`, so a host listed in one and registered through the other is one host: a
 * ws:// or wss:// URL without credentials or fragment; a bare origin is written without its "/".
 * Pure: no I/O, usable while the edge's settings are read.
 * @returns `{ url }` in canonical form, or `{ problem }`: a sentence saying what is wrong.
 */
export function canonicalHostUrl(raw: string): { readonly url: string } | { readonly problem: string } {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return { problem: `not a URL: ${raw.slice(0, 200)}` };
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') return { problem: `must be ws:// or wss://, got ${raw.slice(0, 200)}` };
  if (url.username !== '' || url.password !== '') return { problem: 'must not carry credentials' };
  if (url.hostname === '') return { problem: `names no host: ${raw.slice(0, 200)}` };
  url.hash = '';
  return { url: url.pathname === '/' && url.search === '' ? url.origin : url.href };
}
