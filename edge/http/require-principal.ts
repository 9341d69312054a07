import { eq } from 'drizzle-orm';
import { createMiddleware } from 'hono/factory';
import type { Principal, PrincipalKind } from '../auth/principal.ts';
import { principals } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { sha256Hex } from '../policy/canonical-hash.ts';
import type { Ports } from '../ports.ts';
import type { AppEnv } from './app-env.ts';

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
 * The principal whose bearer token is `token` (resolved as {@link requirePrincipal} does, the
 * same 60 s memory included), or undefined for a malformed or unknown token.
 */
export async function principalForToken(ports: Ports, token: string): Promise<Principal | undefined> {
  if (!/^[A-Za-z0-9_-]{16,256}$/.test(token)) return undefined;
  return principalOf(ports, await sha256Hex(token));
}

async function principalOf(ports: Ports, tokenHash: string): Promise<Principal | undefined> {
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

/**
 * Middleware: resolves `Authorization: Bearer <token>` to a principal by the SHA-256 of the token
 * (tokens are never stored in clear; a token resolved in the last 60 s is not read again) and
 * allows only the given kinds.
 * @throws DomainError('unauthenticated') for a missing, malformed or unknown token;
 *   DomainError('forbidden') for a principal of another kind.
 */
export function requirePrincipal(...kinds: PrincipalKind[]) {
  return createMiddleware<AppEnv>(async function requirePrincipal(c, next) {
    const match = BEARER.exec(c.req.header('Authorization') ?? '');
    if (!match?.[1]) throw new DomainError('unauthenticated', 'send Authorization: Bearer <token>');
    const tokenHash = await sha256Hex(match[1]);
    const principal = await principalOf(c.var.ports, tokenHash);
    if (!principal) throw new DomainError('unauthenticated', 'the bearer token is not known');
    if (!kinds.includes(principal.kind)) {
      throw new DomainError('forbidden', `this endpoint is for ${kinds.join(' or ')} principals, not ${principal.kind}`);
    }
    c.set('principal', principal);
    await next();
  });
}
