import { and, eq, isNull, or } from 'drizzle-orm';
import type { LeaseGrant } from '../../shared/protocol.ts';
import { type RunRow, runs } from '../db/schema.ts';
import { Deadline, HOST_CONNECT_MS } from '../deadline.ts';
import type { EarlyConnection } from '../fleet/early-connection.ts';
import { noteReportedHostId } from '../fleet/health.ts';
import { connectForRun } from '../fleet/host-connection.ts';
import { placementGrantOf, placementOf } from '../fleet/placement.ts';
import { markDraining } from '../fleet/registry.ts';
import { recordRefusedSnapshots } from '../fleet/snapshots.ts';
import { HostCallError, type HostSession } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { hostProfileId } from '../profiles/bindings.ts';

/** The lease a dispatch holds: its id, generation and expiry (epoch ms, host clock). */
export interface HeldLease {
  readonly lease_id: string;
  readonly generation: number;
  readonly expires_at_ms: number;
  /** The expiry is on record on the run; when false, the caller records it with the call's outcome. */
  readonly expiryRecorded: boolean;
}

/**
 * A lease from {@link ensureLease}: held, or (`renewal`) on record with a renewal sent and not yet
 * answered; {@link sendOnLease} sends the call's command on it and settles the renewal.
 */
export interface DispatchLease extends HeldLease {
  /** The renewal sent back to back with the command: its grant, or why it failed. */
  readonly renewal?: Promise<{ readonly grant: LeaseGrant } | { readonly error: unknown }>;
}

/**
 * Makes sure the run holds a live lease on its profile's browser before a command is sent
 * (DESIGN.md section 6). An existing lease is renewed; when the host says it is gone, a read
 * acquires a fresh one, but a write fails `lease_lost` without dispatch: the page it was planned
 * against may no longer be the one it would hit. The lease's expiry is recorded on the run
 * (`lease_expires_at`: how long the profile stays in use, see `assertLeaseAvailable`): at once,
 * or, when the expiry on record outlasts the tool deadline, by the caller with the call's outcome
 * (`expiryRecorded: false`; see record-outcome.ts).
 *
 * Off the hot path (issue 35): when the expiry on record outlasts the tool deadline, the renewal
 * is sent and not waited for (`renewal`); the command goes right behind it on the same session
 * ({@link sendOnLease}). That keeps the lease rule whole: the lease cannot lapse on the host before
 * the command's own lease check, which the host makes for every page operation when its turn
 * comes (browser-host/methods.ts: `lease_lost` unless live, nothing dispatched), so a write is
 * only ever carried out on the lease it was planned on, never on a fresh one; and when the host
 * answers the renewal `lease_lost`, the lease is forgotten as here, a read goes again on a fresh
 * lease and a write fails with the command's own `lease_lost`. Skipping renewals while the expiry
 * leaves room was weighed and not taken: an idle run's lease would then lapse up to a TTL sooner.
 * @param deadline the dispatch's deadline: each lease command gets what is left of it.
 * @param host the host `session` is connected to (registry id and URL): a new lease is acquired
 *   there with the profile's placement (issue 32), and recorded as the run's lease host.
 * @throws HostCallError('lease_lost') for a write whose lease is gone;
 *   HostCallError('admission_full') when no browser slot frees up in time; and whatever
 *   {@link HostSession.call} throws.
 */
export async function ensureLease(
  ports: Ports,
  session: HostSession,
  run: RunRow,
  forWrite: boolean,
  deadline: Deadline,
  host: { readonly id: string; readonly url: string },
): Promise<DispatchLease> {
  if (run.leaseId !== null && run.leaseGeneration !== null && outlastsTheCall(ports, run)) {
    const renewal = session.call('lease.renew', { lease_id: run.leaseId, ttl_ms: ports.config.leaseTtlMs }, deadline.remaining()).then(
      (grant) => ({ grant }),
      (error: unknown) => ({ error }),
    );
    return { lease_id: run.leaseId, generation: run.leaseGeneration, expires_at_ms: run.leaseExpiresAt ?? 0, expiryRecorded: false, renewal };
  }
  if (run.leaseId !== null) {
    try {
      const renewed = await session.call('lease.renew', { lease_id: run.leaseId, ttl_ms: ports.config.leaseTtlMs }, deadline.remaining());
      await ports.db
        .update(runs)
        .set({ leaseExpiresAt: renewed.expires_at_ms })
        .where(and(eq(runs.id, run.id), eq(runs.leaseId, renewed.lease_id)));
      return { ...renewed, expiryRecorded: true };
    } catch (error) {
      if (!isLeaseLost(error)) throw error;
      await forgetLease(ports, run.id, run.leaseId);
      if (forWrite) throw error;
    }
  } else if (forWrite) {
    throw new HostCallError('lease_lost', 'the run holds no lease; observe the page first');
  }
  const grant = await acquire(ports, session, run, deadline.remaining(), host.id);
  await ports.db
    .update(runs)
    .set({
      leaseId: grant.lease_id,
      leaseGeneration: grant.generation,
      leaseExpiresAt: grant.expires_at_ms,
      leaseHostId: host.id,
      leaseHostUrl: host.url,
      updatedAt: ports.clock.now(),
    })
    .where(and(eq(runs.id, run.id), or(isNull(runs.leaseId), eq(runs.leaseId, run.leaseId ?? ''))));
  return { ...grant, expiryRecorded: true };
}

/**
 * Whether the run's lease expiry on record outlasts any call (the tool deadline): its renewal then
 * need not be waited for, and the new expiry is recorded with the call's outcome, in its batch (one
 * statement fewer per call).
 */
function outlastsTheCall(ports: Ports, run: RunRow): boolean {
  return (run.leaseExpiresAt ?? 0) - ports.clock.now() > ports.config.toolDeadlineMs;
}

function isLeaseLost(error: unknown): error is HostCallError {
  return error instanceof HostCallError && error.code === 'lease_lost';
}

/** Forgets lease `leaseId` of run `runId` (the host no longer has it), only while the run still holds that lease. */
async function forgetLease(ports: Ports, runId: string, leaseId: string): Promise<void> {
  await ports.db
    .update(runs)
    .set({ leaseId: null, leaseExpiresAt: null, updatedAt: ports.clock.now() })
    .where(and(eq(runs.id, runId), eq(runs.leaseId, leaseId)));
}

/**
 * Sends a dispatch's one command (`command`, given the lease id) on `lease` from
 * {@link ensureLease}, on the session it came with. A held lease: the command, as is. A pipelined
 * renewal (`lease.renewal`): the command goes out without waiting for it; then, by the renewal's
 * answer, a grant gives the lease its new expiry (recorded with the outcome); `lease_lost`
 * forgets the lease (see {@link ensureLease}), and when the command was refused `lease_lost` too,
 * a read is sent again once on a fresh lease while a write fails with that refusal (nothing was
 * dispatched); any other failure of the renewal leaves the lease as on record (it outlasts the
 * call). The command's own answer or error always stands: a write the host may have carried out is
 * never sent again.
 * @returns the lease the answer came on, and the answer.
 * @throws whatever `command` throws, and for a read sent again whatever {@link ensureLease} throws.
 */
export async function sendOnLease<T>(
  ports: Ports,
  connection: { readonly session: HostSession; readonly run: RunRow; readonly host: { readonly id: string; readonly url: string } },
  lease: DispatchLease,
  forWrite: boolean,
  deadline: Deadline,
  command: (leaseId: string) => Promise<T>,
): Promise<{ readonly lease: HeldLease; readonly answer: T }> {
  const { renewal, ...held } = lease;
  if (renewal === undefined) return { lease: held, answer: await command(held.lease_id) };
  const answering = command(held.lease_id).then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  const renewed = await renewal;
  const answered = await answering;
  const settled = (on: HeldLease) => {
    if ('error' in answered) throw answered.error;
    return { lease: on, answer: answered.value };
  };
  if ('grant' in renewed) return settled({ ...held, generation: renewed.grant.generation, expires_at_ms: renewed.grant.expires_at_ms });
  if (!isLeaseLost(renewed.error)) return settled({ ...held, expiryRecorded: true });
  await forgetLease(ports, connection.run.id, held.lease_id);
  if (!('error' in answered) || forWrite || !isLeaseLost(answered.error)) return settled({ ...held, expiryRecorded: true });
  const { session, run, host } = connection;
  const fresh = await ensureLease(ports, session, { ...run, leaseId: null, leaseExpiresAt: null }, false, deadline, host);
  return { lease: fresh, answer: await command(fresh.lease_id) };
}

/**
 * Connects to the host of `run`'s lease, or its profile's placement (edge/fleet/host-connection.ts),
 * and makes sure the run holds a live lease there (see {@link ensureLease}). A host that answers
 * `host_draining` (it began draining by itself, e.g. its pod is stopping) is marked draining and
 * the profile moves to another host within the same call: nothing was sent. `early`: a session
 * opened while the call was recorded, taken as the first connection attempt (see connectForRun).
 * @returns the session (the caller closes it), the host, the run as it is now and the lease.
 * @throws whatever {@link connectForRun} and {@link ensureLease} throw.
 */
export async function leaseForDispatch(ports: Ports, run: RunRow, forWrite: boolean, deadline: Deadline, early?: EarlyConnection) {
  const connection = await connectForRun(ports, run, deadline.upTo(HOST_CONNECT_MS), early);
  try {
    return { ...connection, lease: await ensureLease(ports, connection.session, connection.run, forWrite, deadline, connection.host) };
  } catch (error) {
    connection.session.close();
    if (!(error instanceof HostCallError) || error.code !== 'host_draining') throw error;
    await markDraining(ports, connection.host.id);
  }
  const elsewhere = await connectForRun(ports, { ...run, leaseId: null, leaseHostId: null, leaseHostUrl: null }, deadline.upTo(HOST_CONNECT_MS));
  try {
    return { ...elsewhere, lease: await ensureLease(ports, elsewhere.session, elsewhere.run, forWrite, deadline, elsewhere.host) };
  } catch (error) {
    elsewhere.session.close();
    throw error;
  }
}

/**
 * `lease.acquire` for the run on host `hostId`, with the profile's placement there (its generation,
 * snapshot key and snapshots to restore from); snapshots the host refused to restore are recorded.
 * A failure gives back the run's reservation (`reserveLease`), so its profile is free at once.
 * @throws HostCallError('host_unavailable') when the profile is no longer placed on that host (it
 *   moved meanwhile; nothing was sent).
 */
async function acquire(ports: Ports, session: HostSession, run: RunRow, timeoutMs: number, hostId: string): Promise<LeaseGrant> {
  const profileId = await hostProfileId(run.ownerId, run.profileId);
  try {
    const placement = await placementOf(ports, profileId);
    if (placement === undefined || placement.hostId !== hostId) {
      throw new HostCallError('host_unavailable', `profile ${run.profileId} moved to another browser host meanwhile; nothing was sent, try again`);
    }
    // The host that will write this profile's snapshots is known by the id it signs them with.
    await noteReportedHostId(ports, hostId, session.hostId);
    const grant = await session.call(
      'lease.acquire',
      {
        run_id: run.id,
        profile_id: profileId,
        placement: await placementGrantOf(ports, { hostProfileId: profileId, generation: placement.generation }),
        origins: run.origins,
        ttl_ms: ports.config.leaseTtlMs,
        // Unset: the host's own admission wait applies (README "Configuration").
        ...(ports.config.admissionWaitMs === undefined ? {} : { wait_ms: ports.config.admissionWaitMs }),
      },
      timeoutMs,
    );
    if (grant.restore && grant.restore.refused.length > 0) await recordRefusedSnapshots(ports, profileId, grant.restore.refused);
    return grant;
  } catch (error) {
    await giveBackReservation(ports, run.id);
    throw error;
  }
}

/**
 * Gives back a lease reservation (`reserveLease`) that did not become a lease: clears the run's
 * `lease_expires_at` only while it holds no lease, so its profile and its owner's browser quota
 * are free at once. A run with a lease is left alone.
 */
export async function giveBackReservation(ports: Ports, runId: string): Promise<void> {
  await ports.db
    .update(runs)
    .set({ leaseExpiresAt: null })
    .where(and(eq(runs.id, runId), isNull(runs.leaseId)));
}

/** The release on a run's end (connecting, then `lease.release`) gets at most this long, in ms. */
const RELEASE_WITHIN_MS = 3_000;

/**
 * Releases the run's lease on the host, best effort: a host that is down or already forgot the
 * lease changes nothing, because an unrenewed lease lapses by its TTL anyway.
 */
export async function releaseLease(ports: Ports, run: RunRow): Promise<void> {
  if (run.leaseId === null) {
    // Only a reservation (reserveLease): give it back.
    await ports.db
      .update(runs)
      .set({ leaseExpiresAt: null })
      .where(and(eq(runs.id, run.id), isNull(runs.leaseId)));
    return;
  }
  let session: HostSession | undefined;
  const deadline = Deadline.after(ports.clock, RELEASE_WITHIN_MS);
  try {
    if (run.leaseHostUrl === null) throw new Error('no host on record for the lease');
    session = await ports.dial(run.leaseHostUrl).connect(deadline.remaining());
    await session.call('lease.release', { lease_id: run.leaseId }, deadline.remaining());
  } catch {
    // best effort: the lease lapses by its TTL
  } finally {
    session?.close();
  }
  await ports.db
    .update(runs)
    .set({ leaseId: null, leaseExpiresAt: null })
    .where(and(eq(runs.id, run.id), eq(runs.leaseId, run.leaseId)));
}
