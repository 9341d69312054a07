import { and, eq, isNull, ne, or, sql } from 'drizzle-orm';
import type { PrincipalView } from '../../shared/api.ts';
import { consoleLinks, consoleSessions, principals } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { forgetPrincipal } from './bearer-token.ts';
import { loadPrincipal, principalView } from './principal-registry.ts';

/**
 * Revokes principal `id` (issue 32): its token is refused with `principal_revoked` (at once by
 * this edge, within 5 s by every other: bearer-token.ts), and so are the tokens of an owner's
 * agents; a revoked owner's console sessions end and its unused sign-in links are used up. One
 * batch: the conditional update that revokes, which refuses to revoke the last unrevoked operator
 * (someone must be able to manage principals), then the owner's sessions and links, changed only
 * when the principal is an owner revoked by now. Revocation is final: nothing clears it.
 * @throws DomainError('not_found'); DomainError('already_revoked'); DomainError('last_operator').
 */
export async function revokePrincipal(ports: Ports, id: string): Promise<PrincipalView> {
  const now = ports.clock.now();
  const revokedOwner = sql`EXISTS (SELECT 1 FROM principals AS revoked WHERE revoked.id = ${id} AND revoked.kind = 'owner' AND revoked.revoked_at IS NOT NULL)`;
  const [revoked] = await ports.db.batch([
    ports.db
      .update(principals)
      .set({ revokedAt: now })
      .where(
        and(
          eq(principals.id, id),
          isNull(principals.revokedAt),
          or(
            ne(principals.kind, 'operator'),
            sql`(SELECT count(*) FROM principals AS operators WHERE operators.kind = 'operator' AND operators.revoked_at IS NULL) > 1`,
          ),
        ),
      )
      .returning(),
    ports.db
      .update(consoleSessions)
      .set({ endedAt: now })
      .where(and(eq(consoleSessions.ownerId, id), isNull(consoleSessions.endedAt), revokedOwner)),
    ports.db
      .update(consoleLinks)
      .set({ usedAt: now })
      .where(and(eq(consoleLinks.ownerId, id), isNull(consoleLinks.usedAt), revokedOwner)),
  ]);
  const [row] = revoked;
  if (row) {
    forgetPrincipal(id);
    return principalView(row);
  }
  const current = await loadPrincipal(ports, id);
  if (current.revokedAt !== null) throw new DomainError('already_revoked', `principal ${id} was revoked at ${new Date(current.revokedAt).toISOString()}`);
  throw new DomainError('last_operator', `principal ${id} is the last unrevoked operator: revoking it would leave no one to manage principals`);
}
