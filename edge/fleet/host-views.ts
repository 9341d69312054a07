import { sql } from 'drizzle-orm';
import type { HostView } from '../../shared/api.ts';
import { type HostRow, profilePlacements } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import type { Ports } from '../ports.ts';
import { freeSlots } from './placement.ts';
import { fleetHosts } from './registry.ts';

/** The operator's view of the fleet's hosts (`GET /v1/hosts`, the console), oldest first. */
export async function listHosts(ports: Ports): Promise<HostView[]> {
  const fleet = await fleetHosts(ports);
  return viewsOf(ports, fleet);
}

/** The views of `rows`, with their free slots and placements (two statements). */
export async function viewsOf(ports: Ports, rows: readonly HostRow[]): Promise<HostView[]> {
  const [free, placed] = await Promise.all([
    freeSlots(ports, rows),
    ports.db.select({ hostId: profilePlacements.hostId, n: sql<number>`count(*)` }).from(profilePlacements).groupBy(profilePlacements.hostId).all(),
  ]);
  return [...rows]
    .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
    .map((row) => ({
      id: row.id,
      url: row.url,
      source: row.source,
      label: row.label,
      state: row.state,
      reported_host_id: row.reportedHostId,
      version: row.version,
      max_browsers: row.maxBrowsers,
      browsers: row.browsers,
      leases: row.leases,
      ceremonies: row.ceremonies,
      free_slots: free.get(row.id) ?? row.maxBrowsers,
      placements: Number(placed.find((entry) => entry.hostId === row.id)?.n ?? 0),
      failed_checks: row.failedChecks,
      last_error: row.lastError,
      checked_at: row.checkedAt === null ? null : iso(row.checkedAt),
      created_at: iso(row.createdAt),
    }));
}
