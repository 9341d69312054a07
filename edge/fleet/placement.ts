import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import { deriveSnapshotKey, type PlacementGrant, SNAPSHOTS_KEPT } from '../../shared/fleet.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type HostRow, type PlacementRow, profilePlacements, profileSnapshots } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { hostProfileId } from '../profiles/bindings.ts';
import { checkHost } from './health.ts';
import { fleetHosts } from './registry.ts';

/**
 * Placement of profiles on the fleet's hosts (issue 32): a profile is placed on one host at a time
 * (`profile_placements`, with a fencing generation). Its first lease goes to the healthy host with
 * the most free slots; later leases stay there while it is healthy. When its host is unreachable,
 * draining, drained or out of the fleet, the next lease moves it to another host (generation + 1),
 * restored there from its newest snapshot. Every write is conditional on the row as read, so two
 * edges racing to place (or move) one profile end with one placement.
 */

/** A profile's host, as a call needs it. */
export interface PlacedHost {
  readonly hostProfileId: string;
  readonly hostId: string;
  readonly url: string;
  readonly generation: number;
  /** Whether a lease was ever reserved on this placement: an unused placement may move freely. */
  readonly used: boolean;
}

/** Ceremony states in which a ceremony holds a browser of its host. */
const LIVE_CEREMONY_STATES = sql`('awaiting_person', 'verifying', 'challenge')`;
/** Run states whose lease (or reservation) holds a browser slot. */
export const HOLDING_STATES = ['queued', 'running', 'waiting_for_approval'] as const;
const HOLDING = sql`('queued', 'running', 'waiting_for_approval')`;

/**
 * The SQL count of browser slots in use on host `hostId` at `now`: runs holding a live lease (or
 * reservation) there, besides `exceptRunId`, plus live sign-in ceremonies of profiles placed there.
 */
export function slotsInUseSql(hostId: string | ReturnType<typeof sql>, now: number, exceptRunId?: string) {
  const except = exceptRunId === undefined ? sql`` : sql` and r.id <> ${exceptRunId}`;
  return sql`((select count(*) from runs r where r.lease_host_id = ${hostId} and r.lease_expires_at > ${now} and r.state in ${HOLDING}${except}) + (select count(*) from sign_in_episodes e join profile_placements p on p.host_profile_id = e.host_profile_id where p.host_id = ${hostId} and e.state = 'open' and e.ceremony_state in ${LIVE_CEREMONY_STATES}))`;
}

/** Free browser slots per host of `fleet`, by the edge's own records (one statement). */
export async function freeSlots(ports: Ports, fleet: readonly HostRow[]): Promise<Map<string, number>> {
  const free = new Map<string, number>();
  if (fleet.length === 0) return free;
  const now = ports.clock.now();
  const rows = await ports.db.all<{ id: string; used: number }>(
    sql`select h.id as id, ${slotsInUseSql(sql`h.id`, now)} as used from hosts h where h.id in (${sql.join(
      fleet.map((host) => sql`${host.id}`),
      sql`, `,
    )})`,
  );
  for (const host of fleet) free.set(host.id, host.maxBrowsers - Number(rows.find((row) => row.id === host.id)?.used ?? 0));
  return free;
}

/** Most attempts at placing one profile while other edges move it at the same time. */
const PLACEMENT_ATTEMPTS = 4;

/**
 * Where `hostProfileId` is served: its placement when its host is healthy (and not `avoid`), else
 * a new placement on the healthy host with the most free slots (fewest profiles placed breaks
 * ties). Moving off a draining host that still answers first waits (within 5 s) for its snapshots
 * to be written, so the move does not outrun the newest one.
 * When no host is healthy on record, the unreachable ones are checked again at once (see
 * `revive`), so a lone host that restarted serves again without waiting for the cron pass.
 * @param options.avoid a host not to use (it just failed or is full), even if it is healthy on record.
 * @throws DomainError('host_unavailable') when no healthy host is in the fleet.
 */
export async function placeProfile(ports: Ports, hostProfileId: string, options: { avoid?: string } = {}): Promise<PlacedHost> {
  for (let attempt = 0; attempt < PLACEMENT_ATTEMPTS; attempt++) {
    const fleet = await fleetHosts(ports);
    const row = await ports.db.select().from(profilePlacements).where(eq(profilePlacements.hostProfileId, hostProfileId)).get();
    const current = row === undefined ? undefined : fleet.find((host) => host.id === row.hostId);
    if (row && current && current.state === 'healthy' && current.id !== options.avoid) return placedOn(row, current);
    if (row && current && current.state === 'draining' && current.id !== options.avoid) await snapshotsWritten(ports, current);
    let target = await emptiestHost(ports, fleet, [row?.hostId, options.avoid]);
    if (!target) {
      // No healthy host on record: the unreachable ones are asked again now (a lone host that
      // restarted must not wait for the next cron pass). Its own host answering keeps the profile there.
      const revived = await revive(ports, fleet, options.avoid);
      const own = row && revived.find((host) => host.id === row.hostId);
      if (row && own) return placedOn(row, own);
      target = revived[0];
    }
    if (!target) {
      throw new DomainError('host_unavailable', `no healthy browser host can take profile ${hostProfileId}: ${fleetInWords(fleet)}`);
    }
    const now = ports.clock.now();
    if (row === undefined) {
      const inserted = await ports.db
        .insert(profilePlacements)
        .values({ hostProfileId, hostId: target.id, generation: 1, reason: 'first_lease', placedAt: now })
        .onConflictDoNothing()
        .run();
      if (rowsChanged(inserted) === 1) return { hostProfileId, hostId: target.id, url: target.url, generation: 1, used: false };
      continue;
    }
    const reason =
      current === undefined
        ? 'host_removed'
        : current.state === 'unreachable'
          ? 'host_unreachable'
          : current.state === 'healthy'
            ? 'first_lease'
            : 'host_draining';
    const moved = await ports.db
      .update(profilePlacements)
      .set({ hostId: target.id, generation: row.generation + 1, reason, previousHostId: row.hostId, placedAt: now, usedAt: null })
      .where(and(eq(profilePlacements.hostProfileId, hostProfileId), eq(profilePlacements.generation, row.generation)))
      .run();
    if (rowsChanged(moved) === 1) return { hostProfileId, hostId: target.id, url: target.url, generation: row.generation + 1, used: false };
  }
  throw new DomainError('host_unavailable', `profile ${hostProfileId} kept moving between hosts; try again`);
}

/** Marks a placement used (a lease was reserved on it), once; it no longer moves off a healthy host. */
export async function markPlacementUsed(ports: Ports, placed: PlacedHost): Promise<void> {
  if (placed.used) return;
  await ports.db
    .update(profilePlacements)
    .set({ usedAt: ports.clock.now() })
    .where(
      and(eq(profilePlacements.hostProfileId, placed.hostProfileId), eq(profilePlacements.generation, placed.generation), isNull(profilePlacements.usedAt)),
    );
}

/**
 * What the host serving `placed` is told with `lease.acquire` and `ceremony.begin`: the
 * generation, the profile's snapshot key and its newest good snapshots (one statement).
 */
export async function placementGrantOf(ports: Ports, placed: Pick<PlacedHost, 'hostProfileId' | 'generation'>): Promise<PlacementGrant> {
  const snapshots = await ports.db
    .select({ version: profileSnapshots.version, digest: profileSnapshots.digest, size_bytes: profileSnapshots.sizeBytes })
    .from(profileSnapshots)
    .where(and(eq(profileSnapshots.hostProfileId, placed.hostProfileId), isNull(profileSnapshots.refusedReason)))
    .orderBy(desc(profileSnapshots.version))
    .limit(SNAPSHOTS_KEPT)
    .all();
  return { generation: placed.generation, snapshot_key: await deriveSnapshotKey(ports.snapshotSecret, placed.hostProfileId), restore: snapshots };
}

/** The placement of `run`'s profile, or undefined when it was never placed. */
export async function placementOfRun(ports: Ports, run: { ownerId: string; profileId: string }): Promise<PlacementRow | undefined> {
  return placementOf(ports, await hostProfileId(run.ownerId, run.profileId));
}

/** The placement of `hostProfileId`, or undefined when it was never placed. */
export async function placementOf(ports: Ports, hostProfileId: string): Promise<PlacementRow | undefined> {
  return ports.db.select().from(profilePlacements).where(eq(profilePlacements.hostProfileId, hostProfileId)).get();
}

function placedOn(row: PlacementRow, host: HostRow): PlacedHost {
  return { hostProfileId: row.hostProfileId, hostId: host.id, url: host.url, generation: row.generation, used: row.usedAt !== null };
}

/** The healthy host (not one of `excluded`) with the most free slots; fewest placements, then id, break ties. */
async function emptiestHost(ports: Ports, fleet: readonly HostRow[], excluded: readonly (string | undefined)[]): Promise<HostRow | undefined> {
  const candidates = fleet.filter((host) => host.state === 'healthy' && !excluded.includes(host.id));
  if (candidates.length <= 1) return candidates[0];
  const free = await freeSlots(ports, candidates);
  const placed = await ports.db
    .select({ hostId: profilePlacements.hostId, n: sql<number>`count(*)` })
    .from(profilePlacements)
    .groupBy(profilePlacements.hostId)
    .all();
  const placements = (host: HostRow) => Number(placed.find((row) => row.hostId === host.id)?.n ?? 0);
  return [...candidates].sort((a, b) => (free.get(b.id) ?? 0) - (free.get(a.id) ?? 0) || placements(a) - placements(b) || a.id.localeCompare(b.id))[0];
}

/** The unreachable hosts of `fleet` (not `avoid`) that answer a check now, healthy again; checked concurrently. */
async function revive(ports: Ports, fleet: readonly HostRow[], avoid: string | undefined): Promise<HostRow[]> {
  const unreachable = fleet.filter((host) => host.state === 'unreachable' && host.id !== avoid);
  const answers = await Promise.all(unreachable.map((host) => checkHost(ports, host)));
  return unreachable.filter((_, index) => answers[index] !== undefined && !answers[index]?.draining).map((host) => ({ ...host, state: 'healthy' as const }));
}

/** Waits (within 5 s, checking every 500 ms) until a draining host has written its pending snapshots. */
async function snapshotsWritten(ports: Ports, host: HostRow): Promise<void> {
  const until = ports.clock.now() + 5_000;
  while (ports.clock.now() < until) {
    const status = await checkHost(ports, host);
    if (status === undefined || status.snapshots_pending === 0) return;
    await ports.clock.sleep(500);
  }
}

/** The fleet's hosts and states in words, for an error message. */
function fleetInWords(fleet: readonly HostRow[]): string {
  if (fleet.length === 0) return 'the fleet has no hosts (HOST_URLS, POST /v1/hosts)';
  return fleet.map((host) => `${host.id} ${host.state}`).join(', ');
}
