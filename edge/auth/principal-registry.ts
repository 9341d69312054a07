import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/sqlite-core';
import type { CreatePrincipalBody, IssuedPrincipal, PrincipalView } from '../../shared/api.ts';
import { newId } from '../db/ids.ts';
import { selectedRow } from '../db/insert-select.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type PrincipalRow, principals } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import { sha256Hex } from '../policy/canonical-hash.ts';
import type { Ports } from '../ports.ts';
import { forgetPrincipal } from './bearer-token.ts';

/**
 * The operator's principals (issue 32): owners and agents created with a token shown once and
 * stored as its SHA-256, listed without token material, and their tokens rotated. Revocation is
 * `revocation.ts`. Operators themselves are created outside the API (the setup script, or SQL).
 */

/** A new bearer token: 256 random bits as 43 base64url characters (the shape bearer-token.ts accepts). */
export function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

/** The API view of a principal row: never its token hash. */
export function principalView(row: PrincipalRow): PrincipalView {
  return {
    id: row.id,
    kind: row.kind,
    owner_id: row.ownerId,
    label: row.label,
    created_at: iso(row.createdAt),
    revoked_at: row.revokedAt === null ? null : iso(row.revokedAt),
  };
}

/** Every principal, oldest first (revoked ones too, with `revoked_at`). */
export async function listPrincipals(ports: Ports): Promise<PrincipalView[]> {
  const rows = await ports.db.select().from(principals).orderBy(asc(principals.createdAt), asc(principals.id)).all();
  return rows.map(principalView);
}

/** One principal by id. @throws DomainError('not_found') */
export async function loadPrincipal(ports: Ports, id: string): Promise<PrincipalRow> {
  const row = await ports.db.select().from(principals).where(eq(principals.id, id)).get();
  if (!row) throw new DomainError('not_found', `no principal ${id}`);
  return row;
}

/**
 * Creates an owner, or an agent for an existing unrevoked owner, with a new token. An agent's row
 * is one `INSERT ... SELECT` from its owner's row, so an owner revoked meanwhile gets no agent.
 * @returns the principal and its token, shown this once.
 * @throws DomainError('not_found') for an agent whose `owner_id` names no owner;
 *   DomainError('already_revoked') for an agent of a revoked owner.
 */
export async function createPrincipal(ports: Ports, body: CreatePrincipalBody): Promise<IssuedPrincipal> {
  const id = newId('prn');
  const token = newToken();
  const tokenHash = await sha256Hex(token);
  const now = ports.clock.now();
  const label = body.label ?? '';
  if (body.kind === 'owner') {
    await ports.db.insert(principals).values({ id, kind: 'owner', ownerId: id, tokenHash, label, createdAt: now });
  } else {
    const owner = alias(principals, 'owner');
    const inserted = await ports.db
      .insert(principals)
      .select((qb) =>
        qb
          .select(selectedRow(principals, { id, kind: 'agent', ownerId: owner.id, tokenHash, label, createdAt: now, revokedAt: null }))
          .from(owner)
          .where(and(eq(owner.id, body.owner_id), eq(owner.kind, 'owner'), isNull(owner.revokedAt)))
          .getSQL(),
      )
      .run();
    if (rowsChanged(inserted) !== 1) {
      const row = await ports.db.select().from(principals).where(eq(principals.id, body.owner_id)).get();
      if (row?.kind === 'owner') throw new DomainError('already_revoked', `owner ${body.owner_id} is revoked: it can have no new agent`);
      throw new DomainError('not_found', `owner_id: no owner ${body.owner_id}`);
    }
  }
  return { ...principalView(await loadPrincipal(ports, id)), token };
}

/**
 * Gives principal `id` a new token; the old one is refused from then on (at once by this edge,
 * within 5 s by every other: bearer-token.ts). One conditional update, only while neither the
 * principal nor, for an agent, its owner is revoked: an agent's authority is its owner's, so a
 * token for an agent of a revoked owner would be refused on every use.
 * @returns the principal and its new token, shown this once.
 * @throws DomainError('not_found'); DomainError('already_revoked') for a revoked principal or an
 *   agent of a revoked owner.
 */
export async function rotatePrincipal(ports: Ports, id: string): Promise<IssuedPrincipal> {
  const token = newToken();
  const [rotated] = await ports.db
    .update(principals)
    .set({ tokenHash: await sha256Hex(token) })
    .where(
      and(
        eq(principals.id, id),
        isNull(principals.revokedAt),
        sql`NOT (principals.kind = 'agent' AND EXISTS (SELECT 1 FROM principals AS owner WHERE owner.id = principals.owner_id AND owner.revoked_at IS NOT NULL))`,
      ),
    )
    .returning();
  if (!rotated) {
    const current = await loadPrincipal(ports, id);
    if (current.revokedAt === null) {
      throw new DomainError('already_revoked', `principal ${id} acts for the revoked owner ${current.ownerId}: its token cannot be rotated`);
    }
    throw new DomainError('already_revoked', `principal ${id} is revoked: its token cannot be rotated`);
  }
  forgetPrincipal(id);
  return { ...principalView(rotated), token };
}
