import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

// MCP clients registered with the edge.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

/**
 * What the MCP client an agent last initialized with can do (issue 18): the MCP endpoint is
 * stateless, so a tool call learns from here whether it may ask the client to show the owner's
 * console link (URL-mode elicitation). One row per agent principal, replaced by each `initialize`.
 */
export const mcpClients = sqliteTable('mcp_clients', {
  principalId: text('principal_id').primaryKey(),
  urlElicitation: integer('url_elicitation', { mode: 'boolean' }).notNull(),
  protocolVersion: text('protocol_version').notNull(),
  clientName: text('client_name'),
  updatedAt: integer('updated_at').notNull(),
});
