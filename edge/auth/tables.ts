import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

// The principals: who can call the API.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

/**
 * Who can call the API. Tokens are stored only as SHA-256 hex digests. Operators create owners
 * and agents, rotate their tokens and revoke them over `/v1/principals` (issue 32); a revoked
 * principal's token (and an agent's whose owner is revoked) is refused with `principal_revoked`.
 */
export const principals = sqliteTable('principals', {
  id: text('id').primaryKey(),
  kind: text('kind', { enum: ['agent', 'owner', 'operator', 'host'] }).notNull(),
  /** The owner this principal acts for (an owner's own id for an owner). */
  ownerId: text('owner_id').notNull(),
  tokenHash: text('token_hash').notNull().unique(),
  label: text('label').notNull().default(''),
  createdAt: integer('created_at').notNull(),
  /** When an operator revoked the principal (epoch ms); null while it may call the API. Never cleared. */
  revokedAt: integer('revoked_at'),
});

export type PrincipalRow = typeof principals.$inferSelect;
