import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

// Owner webhooks and their deliveries.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

/**
 * The webhook an operator set for an owner (issue 15): where "approval needed", "sign-in needed"
 * and "run ended" are posted, and the secret their HMAC-SHA256 signatures are made with.
 */
export const ownerWebhooks = sqliteTable('owner_webhooks', {
  ownerId: text('owner_id').primaryKey(),
  url: text('url').notNull(),
  secret: text('secret').notNull(),
  updatedAt: integer('updated_at').notNull(),
});

/**
 * The webhook outbox: one row per notification to deliver, its JSON body, how many attempts were
 * made, when the next is due (null once delivered or given up), when it was delivered, and the
 * last failure. Epoch ms.
 */
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    event: text('event', { enum: ['approval_needed', 'sign_in_needed', 'run_ended'] }).notNull(),
    body: text('body').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at'),
    deliveredAt: integer('delivered_at'),
    lastError: text('last_error'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('webhook_deliveries_due_idx').on(t.nextAttemptAt)],
);

export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;
