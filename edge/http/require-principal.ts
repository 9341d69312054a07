import { eq } from 'drizzle-orm';
import { createMiddleware } from 'hono/factory';
import type { PrincipalKind } from '../auth/principal.ts';
import { principals } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { sha256Hex } from '../policy/canonical-hash.ts';
import type { AppEnv } from './app-env.ts';

const BEARER = /^Bearer ([A-Za-z0-9_-]{16,256})$/;

/**
 * Middleware: resolves `Authorization: Bearer <token>` to a principal by the SHA-256 of the token
 * (tokens are never stored in clear) and allows only the given kinds.
 * @throws DomainError('unauthenticated') for a missing, malformed or unknown token;
 *   DomainError('forbidden') for a principal of another kind.
 */
export function requirePrincipal(...kinds: PrincipalKind[]) {
  return createMiddleware<AppEnv>(async function requirePrincipal(c, next) {
    const match = BEARER.exec(c.req.header('Authorization') ?? '');
    if (!match?.[1]) throw new DomainError('unauthenticated', 'send Authorization: Bearer <token>');
    const tokenHash = await sha256Hex(match[1]);
    const row = await c.var.ports.db.select().from(principals).where(eq(principals.tokenHash, tokenHash)).get();
    if (!row) throw new DomainError('unauthenticated', 'the bearer token is not known');
    if (!kinds.includes(row.kind)) {
      throw new DomainError('forbidden', `this endpoint is for ${kinds.join(' or ')} principals, not ${row.kind}`);
    }
    c.set('principal', { id: row.id, kind: row.kind, ownerId: row.ownerId });
    await next();
  });
}
