import { eq } from 'drizzle-orm';
import { alias } from 'drizzle-orm/sqlite-core';
import { principals } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { sha256Hex } from '../policy/canonical-hash.ts';
import type { Ports } from '../ports.ts';
import type { Principal } from './principal.ts';

/** A bearer token's accepted shape: 16 to 256 URL-safe characters. */
const TOKEN = /^[A-Za-z0-9_-]{16,256}$/;
/** `Authorization: Bearer <token>` with a token of the accepted shape. */
const BEARER = /^Bearer ([A-Za-z0-9_-]{16,256})$/;

/**
 * How long a resolved token is remembered by this isolate or process, in ms: the longest a
 * revoked or rotated token is still accepted by another isolate (issue 32: "within seconds").
 */
export const PRINCIPAL_CACHE_MS = 5_000;
/** Most tokens remembered at once; the oldest is forgotten first. */
const PRINCIPAL_CACHE_ENTRIES = 1_024;

/**
 * Tokens resolved lately, by token hash, so a burst of requests need not read the principal
 * each time (issue 14: D1 statements per proposal). Unknown and revoked tokens are never
 * remembered. The isolate that revokes or rotates forgets at once ({@link forgetPrincipal});
 * every other isolate or process within {@link PRINCIPAL_CACHE_MS}.
 */
const resolved = new Map<string, { readonly principal: Principal; readonly until: number }>();

/** The owner a principal acts for, read beside it to see whether that owner is revoked. */
const owners = alias(principals, 'owners');

/**
 * The token of an `Authorization` header value of the form `Bearer <token>`, or undefined for a
 * missing or malformed header.
 */
export function bearerTokenOf(authorization: string | undefined): string | undefined {
  return BEARER.exec(authorization ?? '')?.[1];
}

/**
 * The principal whose bearer token is `token`, found by the token's SHA-256 (tokens are never
 * stored in clear) with its owner in one statement, and remembered for 5 s per isolate or
 * process; undefined for a malformed or unknown token. The one token resolution of the edge: the
 * HTTP API's middleware, the MCP endpoint and the console's sign-in all call it.
 * @throws DomainError('principal_revoked') when an operator revoked the principal, or the owner
 *   an agent acts for (an agent's authority is its owner's).
 */
export async function principalForToken(ports: Ports, token: string): Promise<Principal | undefined> {
  if (!TOKEN.test(token)) return undefined;
  const tokenHash = await sha256Hex(token);
  const now = Date.now();
  const remembered = resolved.get(tokenHash);
  if (remembered !== undefined && remembered.until > now) return remembered.principal;
  resolved.delete(tokenHash);
  const found = await ports.db
    .select({ row: principals, ownerRevokedAt: owners.revokedAt })
    .from(principals)
    .leftJoin(owners, eq(owners.id, principals.ownerId))
    .where(eq(principals.tokenHash, tokenHash))
    .get();
  if (!found) return undefined;
  const { row, ownerRevokedAt } = found;
  if (row.revokedAt !== null) throw new DomainError('principal_revoked', `principal ${row.id} was revoked; ask an operator for a new principal`);
  // An agent acts for its owner; an operator's owner_id names whom it acts for in tests and the demo only.
  if (row.kind === 'agent' && ownerRevokedAt !== null && ownerRevokedAt !== undefined) {
    throw new DomainError('principal_revoked', `the owner ${row.ownerId} that principal ${row.id} acts for was revoked`);
  }
  const principal: Principal = { id: row.id, kind: row.kind, ownerId: row.ownerId };
  if (resolved.size >= PRINCIPAL_CACHE_ENTRIES) resolved.delete(resolved.keys().next().value as string);
  resolved.set(tokenHash, { principal, until: now + PRINCIPAL_CACHE_MS });
  return principal;
}

/**
 * Forgets, in this isolate or process, every remembered token of principal `id` and of the
 * principals acting for it (an owner's agents): called after a rotation or a revocation, so the
 * edge that made the change refuses the old token at once.
 */
export function forgetPrincipal(id: string): void {
  for (const [tokenHash, entry] of resolved) {
    if (entry.principal.id === id || entry.principal.ownerId === id) resolved.delete(tokenHash);
  }
}
