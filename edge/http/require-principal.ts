import { createMiddleware } from 'hono/factory';
import { bearerTokenOf, principalForToken } from '../auth/bearer-token.ts';
import type { PrincipalKind } from '../auth/principal.ts';
import { DomainError } from '../domain-error.ts';
import type { AppEnv } from './app-env.ts';

/**
 * Middleware: resolves `Authorization: Bearer <token>` to a principal ({@link principalForToken}: by
 * the token's SHA-256, remembered for 5 s) and allows only the given kinds.
 * @throws DomainError('unauthenticated') for a missing, malformed or unknown token;
 *   DomainError('principal_revoked') for a revoked principal's token;
 *   DomainError('forbidden') for a principal of another kind.
 */
export function requirePrincipal(...kinds: PrincipalKind[]) {
  return createMiddleware<AppEnv>(async function requirePrincipal(c, next) {
    const token = bearerTokenOf(c.req.header('Authorization'));
    if (token === undefined) throw new DomainError('unauthenticated', 'send Authorization: Bearer <token>');
    const principal = await principalForToken(c.var.ports, token);
    if (!principal) throw new DomainError('unauthenticated', 'the bearer token is not known');
    if (!kinds.includes(principal.kind)) {
      throw new DomainError('forbidden', `this endpoint is for ${kinds.join(' or ')} principals, not ${principal.kind}`);
    }
    c.set('principal', principal);
    await next();
  });
}
