import { z } from 'zod';

/** An origin as the browser reports it: `scheme://host[:port]`, http or https only. */
export const Origin = z
  .string()
  .max(255)
  .regex(/^https?:\/\/[A-Za-z0-9.-]+(:[0-9]{1,5})?$/, 'an http(s) origin such as https://example.com or http://127.0.0.1:8080')
  .refine(isCanonicalOrigin, 'an origin the URL parser accepts as it is (a valid host and a port up to 65535)');

/** True when the URL parser accepts `text` and gives back the same origin (modulo letter case). */
function isCanonicalOrigin(text: string): boolean {
  try {
    return new URL(text).origin === text.toLowerCase();
  } catch {
    return false;
  }
}
export type Origin = z.infer<typeof Origin>;

/**
 * The origin of a URL (`scheme://host[:port]`), or undefined when `url` is not an absolute URL.
 * The one origin parser of the project: policy, dispatch, sign-in and the views all use it.
 */
export function originOf(url: string): string | undefined {
  try {
    return new URL(url.trim()).origin;
  } catch {
    return undefined;
  }
}

/**
 * The origin of `url` (as {@link originOf}) when the URL itself is http(s), else undefined: a
 * `blob:` or `about:` URL has no page origin of its own here.
 */
export function httpOrigin(url: string): string | undefined {
  // The URL's own scheme must be http(s): a blob: URL, say, has the origin of its creator.
  const scheme = /^\s*([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  return scheme === 'http' || scheme === 'https' ? originOf(url) : undefined;
}

/** Whether `url` is a page of one of `origins` (exact origins, as {@link originOf} gives them). */
export function withinOrigins(url: string, origins: readonly string[]): boolean {
  const origin = originOf(url);
  return origin !== undefined && origins.includes(origin);
}

/**
 * The distinct origins of already validated {@link Origin} strings, in their canonical form
 * (lower-case scheme and host, default port dropped), first occurrence first.
 */
export function canonicalOrigins(origins: readonly string[]): string[] {
  return [...new Set(origins.flatMap((origin) => originOf(origin) ?? []))];
}
