import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

// The owner console's sessions and sign-in links.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

/**
 * Owners' console sessions (issue 15): the SHA-256 of the random session id the cookie carries
 * (never the id itself), its owner, the CSRF token every form post of the session must carry, and
 * when it began, expires and was ended (sign-out), all epoch ms.
 */
export const consoleSessions = sqliteTable(
  'console_sessions',
  {
    idHash: text('id_hash').primaryKey(),
    ownerId: text('owner_id').notNull(),
    csrfToken: text('csrf_token').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    endedAt: integer('ended_at'),
  },
  (t) => [index('console_sessions_owner_idx').on(t.ownerId, t.createdAt)],
);

export type ConsoleSessionRow = typeof consoleSessions.$inferSelect;

/**
 * One-time sign-in links for the console (issue 15; `npm run dev` prints one for the local
 * owner): the SHA-256 of the link's token, its owner, when it expires and when it was used (a
 * link opens one session, once), epoch ms.
 */
export const consoleLinks = sqliteTable('console_links', {
  tokenHash: text('token_hash').primaryKey(),
  ownerId: text('owner_id').notNull(),
  createdAt: integer('created_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
  usedAt: integer('used_at'),
});
