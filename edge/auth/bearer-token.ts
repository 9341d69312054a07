import { eq } from 'drizzle-orm';
import { principals } from '../db/schema.ts';
import { sha256Hex } from '../policy/canonical-hash.ts';
import type { Ports } from '../ports.ts';
import type { Principal } from './principal.ts';

/** A bearer token's accepted shape: 16 to 256 URL-safe characters. */
const TOKEN = /^[A-Za-z0-9_-]{16,256}$/;
/** `Authorization: Bearer <token>` with a token of the accepted shape. */
const BEARER = /^Bearer ([A-Za-z0-9_-]{16,256})$/;

/** How long a resolved token is remembered by this isolate or process, in ms. */
const PRINCIPAL_CACHE_MS = 60_000;
/** Most tokens remembered at once; the oldest is forgotten first. */
const PRINCIPAL_CACHE_ENTRIES = 1_024;

/**
 * Tokens resolved lately, by token hash: a principal's id, kind and owner never change for its
 * token (no route updates or deletes a principal), so each request need not read them again
 * (issue 14: D1 statements per proposal). Unknown tokens are never remembered. A principal an
 * operator deletes from the database directly stops working within 60 s.
 */
const resolved = new Map<string, { readonly principal: Principal; readonly until: number }>();

/**
 * The token of an `Authorization` header value of the form `Bearer <token>`, or undefined for a
 * missing or malformed header.
 */
export function bearerTokenOf(authorization: string | undefined): string | undefined {
  return BEARER.exec(authorization ?? '')?.[1];
}

/**
 * The principal whose bearer token is `token`, found by the token's SHA-256 (tokens are never
 * stored in clear) and remembered for 60 s per isolate or process; undefined for a malformed or
 * unknown token. The one token resolution of the edge: the HTTP API's middleware, the MCP endpoint
 * and the console's sign-in all call it.
 */
export async function principalForToken(ports: Ports, token: string): Promise<Principal | undefined> {
  if (!TOKEN.test(token)) return undefined;
  const tokenHash = await sha256Hex(token);
  const now = Date.now();
  const remembered = resolved.get(tokenHash);
  if (remembered !== undefined && remembered.until > now) return remembered.principal;
  resolved.delete(tokenHash);
  const row = await ports.db.select().from(principals).where(eq(principals.tokenHash, tokenHash)).get();
  if (!row) return undefined;
  const principal: Principal = { id: row.id, kind: row.kind, ownerId: row.ownerId };
  if (resolved.size >= PRINCIPAL_CACHE_ENTRIES) resolved.delete(resolved.keys().next().value as string);
  resolved.set(tokenHash, { principal, until: now + PRINCIPAL_CACHE_MS });
  return principal;
}
