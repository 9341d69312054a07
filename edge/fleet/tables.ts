import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { HostState } from '../../shared/fleet.ts';
import { valuesOf } from '../db/enum-values.ts';

// The fleet of browser hosts (issue 32): the hosts the edge knows, where each profile is placed,
// and the profiles' snapshots.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

/**
 * A browser host the edge may place profiles on: one listed in `HOST_URLS` (`source: config`, id
 * derived from its URL, so every edge agrees on it) or registered through the operator API
 * (`source: operator`). Its figures are the last `host.status` it answered.
 */
export const hosts = sqliteTable('hosts', {
  id: text('id').primaryKey(),
  /** ws:// or wss:// URL of the host's wire server; a host's URL never changes. */
  url: text('url').notNull().unique(),
  source: text('source', { enum: ['config', 'operator'] }).notNull(),
  label: text('label').notNull().default(''),
  state: text('state', { enum: valuesOf(HostState) })
    .notNull()
    .default('healthy'),
  /** The id the host announces in its signed hello (`HOST_ID`); snapshot tokens must name it. */
  reportedHostId: text('reported_host_id'),
  version: text('version'),
  /** Browsers the host admits at once (its `max_browsers`; 3 until it first answers). */
  maxBrowsers: integer('max_browsers').notNull().default(3),
  browsers: integer('browsers').notNull().default(0),
  leases: integer('leases').notNull().default(0),
  ceremonies: integer('ceremonies').notNull().default(0),
  /** Checks (cron or use) that failed in a row; at `HOST_UNREACHABLE_AFTER_CHECKS` the host is `unreachable`. */
  failedChecks: integer('failed_checks').notNull().default(0),
  /** Why the last check failed, in words; null after a good one. */
  lastError: text('last_error'),
  checkedAt: integer('checked_at'),
  createdAt: integer('created_at').notNull(),
});

export type HostRow = typeof hosts.$inferSelect;

/** Why a profile is where it is. */
export const PLACEMENT_REASONS = ['first_lease', 'host_unreachable', 'host_draining', 'host_removed'] as const;

/**
 * Where a host profile is placed: one host at a time. `generation` is the fencing token (1 for
 * the first placement, +1 each move); it only changes by a conditional update on its previous
 * value, so two edges racing to place or move a profile end with one placement, and a host's
 * snapshot is accepted only at the current generation.
 */
export const profilePlacements = sqliteTable(
  'profile_placements',
  {
    hostProfileId: text('host_profile_id').primaryKey(),
    hostId: text('host_id').notNull(),
    generation: integer('generation').notNull(),
    reason: text('reason', { enum: PLACEMENT_REASONS }).notNull(),
    /** The host it was moved from; null for the first placement. */
    previousHostId: text('previous_host_id'),
    placedAt: integer('placed_at').notNull(),
    /** When a lease was first reserved on this placement (epoch ms); until then it may move freely. */
    usedAt: integer('used_at'),
  },
  (t) => [index('profile_placements_host_idx').on(t.hostId)],
);

export type PlacementRow = typeof profilePlacements.$inferSelect;

/**
 * A profile's stored snapshots (sealed bytes in the artifact store under `storeKey`), versions
 * 1, 2, ... per host profile; the newest `SNAPSHOTS_KEPT` (shared/fleet.ts) good ones are kept. `refused`
 * is set when a host refused to restore it (digest, seal or archive broken): it is never offered
 * again.
 */
export const profileSnapshots = sqliteTable(
  'profile_snapshots',
  {
    hostProfileId: text('host_profile_id').notNull(),
    version: integer('version').notNull(),
    /** The placement generation it was written at, and the registry id of the host that wrote it. */
    generation: integer('generation').notNull(),
    hostId: text('host_id').notNull(),
    storeKey: text('store_key').notNull(),
    /** SHA-256 of the sealed bytes, hex. */
    digest: text('digest').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    refusedReason: text('refused_reason'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.hostProfileId, t.version] })],
);

export type ProfileSnapshotRow = typeof profileSnapshots.$inferSelect;
