import { and, eq, gt, inArray, ne, sql } from 'drizzle-orm';
import { rowsChanged } from '../db/rows-changed.ts';
import { type RunRow, runs } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { HOLDING_STATES, markPlacementUsed, type PlacedHost, placeProfile, slotsInUseSql } from '../fleet/placement.ts';
import { releaseLease } from '../pipeline/lease.ts';
import type { Ports } from '../ports.ts';
import { hostProfileId } from '../profiles/bindings.ts';
import { expireIfPastDeadline } from '../runs/lifecycle.ts';
import { secondsUntil } from './rates.ts';

/** How long a reservation waits for a browser slot in the fleet when the host's own wait is not configured, in ms (the host's default). */
const DEFAULT_FLEET_WAIT_MS = 5_000;
/** Spacing of the reservation's attempts while the fleet is full, in ms. */
const FLEET_FULL_POLL_MS = 250;

/**
 * Before a call that will need a new lease (the run holds none, or the one it holds has lapsed):
 * reserves a browser for the run by one conditional update of its `lease_expires_at` (for one
 * tool deadline; the dispatch's `lease.acquire` replaces it with the host's expiry), which wins
 * only while no other live run of the owner holds or reserves the same profile and the owner's
 * runs hold fewer than `leasedBrowsersPerOwner`, and (issue 32) while the host the profile is placed
 * on has a free browser slot: the reservation is on that host (`lease_host_id`). Calls that arrive
 * together are serialized by the database, so they can never all pass. A holder past its deadline
 * is ended (and its lease released) first, so the next run never waits for its TTL. The host
 * checks the profile again on `lease.acquire` (`profile_in_use`), whatever the database says.
 *
 * When the profile's host is full, a placement no lease has used yet moves to the host with the
 * most free slots; otherwise the reservation waits, up to the admission wait (`ADMISSION_WAIT_MS`,
 * else 5 s), for a slot there.
 * @returns the run as reserved (its lease host set).
 * @throws DomainError('profile_in_use') naming the holding run, Retry-After until its lease's
 *   expiry; DomainError('quota_exceeded') with Retry-After until the owner's first lease expires;
 *   DomainError('fleet_full') with Retry-After until the first lease on the profile's host
 *   expires; DomainError('host_unavailable') when the fleet has no healthy host.
 */
export async function reserveLease(ports: Ports, run: RunRow): Promise<RunRow> {
  const now = ports.clock.now();
  if (run.leaseId !== null && (run.leaseExpiresAt ?? 0) > now) return run;
  const others = (profile?: string) =>
    sql`from runs o where o.owner_id = ${run.ownerId} and o.id <> ${run.id} and o.lease_expires_at > ${now} and o.state in (${sql.join(
      HOLDING_STATES.map((state) => sql`${state}`),
      sql`, `,
    )})${profile === undefined ? sql`` : sql` and o.profile_id = ${profile}`}`;
  const holders = async () =>
    ports.db
      .select()
      .from(runs)
      .where(and(eq(runs.ownerId, run.ownerId), ne(runs.id, run.id), gt(runs.leaseExpiresAt, now), inArray(runs.state, [...HOLDING_STATES])))
      .all();
  for (const holder of await holders()) {
    if (holder.deadlineAt > now) continue;
    const ended = await expireIfPastDeadline(ports, holder);
    await releaseLease(ports, ended);
  }
  const limit = ports.config.quotas.leasedBrowsersPerOwner;
  const profile = await hostProfileId(run.ownerId, run.profileId);
  const waitUntil = now + (ports.config.admissionWaitMs ?? DEFAULT_FLEET_WAIT_MS);
  // Undefined when no host of the fleet answers at all: the reservation then holds no slot
  // anywhere, and the dispatch fails host_unavailable (not sent) as a recorded call, as it always
  // has with the one host down.
  let placed: PlacedHost | undefined = await placeProfile(ports, profile).catch(noHealthyHost);
  for (;;) {
    const at = ports.clock.now();
    const host = { leaseHostId: placed?.hostId ?? null, leaseHostUrl: placed?.url ?? null };
    const reserved = await ports.db
      .update(runs)
      .set({ leaseExpiresAt: sql`max(coalesce(${runs.leaseExpiresAt}, 0), ${at + ports.config.toolDeadlineMs})`, ...host })
      .where(
        and(
          eq(runs.id, run.id),
          sql`not exists (select 1 ${others(run.profileId)})`,
          sql`(select count(*) ${others()}) < ${limit}`,
          placed === undefined ? undefined : sql`${slotsInUseSql(placed.hostId, at, run.id)} < (select max_browsers from hosts where id = ${placed.hostId})`,
        ),
      )
      .run();
    if (rowsChanged(reserved) === 1) {
      if (placed) await markPlacementUsed(ports, placed);
      return { ...run, leaseExpiresAt: Math.max(run.leaseExpiresAt ?? 0, at + ports.config.toolDeadlineMs), ...host };
    }
    const holding = await holders();
    if (placed === undefined || holding.some((holder) => holder.profileId === run.profileId) || holding.length >= limit) break;
    // The profile's host is full. A placement no lease used yet goes where there is room.
    if (!placed.used) {
      const moved = await placeProfile(ports, profile, { avoid: placed.hostId }).catch(() => undefined);
      if (moved && (await hasRoom(ports, moved.hostId))) {
        placed = moved;
        continue;
      }
    }
    if (ports.clock.now() >= waitUntil) throw await fleetFull(ports, placed);
    await ports.clock.sleep(Math.min(FLEET_FULL_POLL_MS, Math.max(1, waitUntil - ports.clock.now())));
  }
  const live = await holders();
  const onProfile = live.find((holder) => holder.profileId === run.profileId);
  if (onProfile) {
    const until = onProfile.leaseExpiresAt ?? now;
    throw new DomainError(
      'profile_in_use',
      `profile ${run.profileId} is in use by run ${onProfile.id} until ${new Date(until).toISOString()} (or until that run ends)`,
      { run_id: onProfile.id, lease_expires_at: new Date(until).toISOString() },
      { retryAfterS: secondsUntil(now, until) },
    );
  }
  const first = live.length === 0 ? now + 1_000 : Math.min(...live.map((holder) => holder.leaseExpiresAt ?? now));
  throw new DomainError(
    'quota_exceeded',
    `this owner's runs already hold ${live.length} browsers (at most ${limit}); end a run or wait for its lease to lapse`,
    undefined,
    { retryAfterS: secondsUntil(now, first) },
  );
}

/**
 * Before an agent claims `run` (issue 32: a full fleet answers claims 429 too): when the run holds
 * no live lease, waits up to the admission wait for a free slot on the host its profile is placed
 * on (placing it where there is most room when it is not placed yet, or when its placement was
 * never used). Reserves nothing: the run's first call reserves its slot (see {@link reserveLease}).
 * @throws DomainError('fleet_full') with Retry-After; DomainError('host_unavailable') when the
 *   fleet has no healthy host.
 */
export async function awaitFleetRoom(ports: Ports, run: RunRow): Promise<void> {
  if (run.leaseId !== null && (run.leaseExpiresAt ?? 0) > ports.clock.now()) return;
  const profile = await hostProfileId(run.ownerId, run.profileId);
  const waitUntil = ports.clock.now() + (ports.config.admissionWaitMs ?? DEFAULT_FLEET_WAIT_MS);
  const firstPlaced = await placeProfile(ports, profile).catch(noHealthyHost);
  // No host answers at all: nothing to wait for here; the run's calls say host_unavailable.
  if (firstPlaced === undefined) return;
  let placed = firstPlaced;
  for (;;) {
    if (await hasRoom(ports, placed.hostId)) return;
    if (!placed.used) {
      const moved = await placeProfile(ports, profile, { avoid: placed.hostId }).catch(() => undefined);
      if (moved) placed = moved;
      if (moved && (await hasRoom(ports, moved.hostId))) return;
    }
    if (ports.clock.now() >= waitUntil) throw await fleetFull(ports, placed);
    await ports.clock.sleep(Math.min(FLEET_FULL_POLL_MS, Math.max(1, waitUntil - ports.clock.now())));
  }
}

/** Whether host `hostId` has a free browser slot by the edge's records. */
async function hasRoom(ports: Ports, hostId: string): Promise<boolean> {
  const row = await ports.db.get<{ room: number }>(
    sql`select (${slotsInUseSql(hostId, ports.clock.now())} < (select max_browsers from hosts where id = ${hostId})) as room`,
  );
  return Number(row?.room ?? 0) === 1;
}

/**
 * The `fleet_full` refusal for a profile placed on `placed`: no slot freed up within the wait;
 * Retry-After until the first lease on that host expires (1 s when none is on record).
 */
async function fleetFull(ports: Ports, placed: PlacedHost): Promise<DomainError> {
  const now = ports.clock.now();
  const first = await ports.db.get<{ at: number | null }>(
    sql`select min(lease_expires_at) as at from runs where lease_host_id = ${placed.hostId} and lease_expires_at > ${now} and state in (${sql.join(
      HOLDING_STATES.map((state) => sql`${state}`),
      sql`, `,
    )})`,
  );
  const until = first?.at ?? now + 1_000;
  return new DomainError(
    'fleet_full',
    `every browser slot of host ${placed.hostId}, where this run's profile is placed, is in use, and none freed up in time; nothing was dispatched, try again after Retry-After`,
    { host_id: placed.hostId, retry_at: new Date(until).toISOString() },
    { retryAfterS: secondsUntil(now, until) },
  );
}

/** `placeProfile`'s refusal when the fleet has no healthy host, as undefined; anything else is thrown again. */
function noHealthyHost(error: unknown): undefined {
  if (error instanceof DomainError && error.code === 'host_unavailable') return undefined;
  throw error;
}
