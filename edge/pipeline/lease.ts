import { and, eq, isNull, or } from 'drizzle-orm';
import type { LeaseGrant } from '../../shared/protocol.ts';
import { type RunRow, runs } from '../db/schema.ts';
import { Deadline, HOST_CONNECT_MS } from '../deadline.ts';
import { noteReportedHostId } from '../fleet/health.ts';
import { connectForRun } from '../fleet/host-connection.ts';
import { placementGrantOf, placementOf } from '../fleet/placement.ts';
import { markDraining } from '../fleet/registry.ts';
import { recordRefusedSnapshots } from '../fleet/snapshots.ts';
import { HostCallError, type HostSession } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { hostProfileId } from '../profiles/bindings.ts';

/**
 * Makes sure the run holds a live lease on its profile's browser before a command is sent
 * (DESIGN.md section 6). An existing lease is renewed; when the host says it is gone, a read
 * acquires a fresh one, but a write fails `lease_lost` without dispatch: the page it was planned
 * against may no longer be the one it would hit. The lease's expiry is recorded on the run
 * (`lease_expires_at`: how long the profile stays in use, see `assertLeaseAvailable`): at once,
 * or, when the expiry on record outlasts the tool deadline, by the caller with the call's outcome
 * (`expiryRecorded: false`; see record-outcome.ts).
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
): Promise<LeaseGrant & { readonly expiryRecorded: boolean }> {
  if (run.leaseId !== null) {
    try {
      const renewed = await session.call('lease.renew', { lease_id: run.leaseId, ttl_ms: ports.config.leaseTtlMs }, deadline.remaining());
      // The expiry on record outlasts any call (the tool deadline): the new one is recorded with
      // the call's outcome, in its batch (one statement fewer per call).
      if ((run.leaseExpiresAt ?? 0) - ports.clock.now() > ports.config.toolDeadlineMs) return { ...renewed, expiryRecorded: false };
      await ports.db
        .update(runs)
        .set({ leaseExpiresAt: renewed.expires_at_ms })
        .where(and(eq(runs.id, run.id), eq(runs.leaseId, renewed.lease_id)));
      return { ...renewed, expiryRecorded: true };
    } catch (error) {
      if (!(error instanceof HostCallError) || error.code !== 'lease_lost') throw error;
      await ports.db
        .update(runs)
        .set({ leaseId: null, leaseExpiresAt: null, updatedAt: ports.clock.now() })
        .where(and(eq(runs.id, run.id), eq(runs.leaseId, run.leaseId)));
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
 * Connects to the host of `run`'s lease, or its profile's placement (edge/fleet/host-connection.ts),
 * and makes sure the run holds a live lease there (see {@link ensureLease}). A host that answers
 * `host_draining` (it began draining by itself, e.g. its pod is stopping) is marked draining and
 * the profile moves to another host within the same call: nothing was sent.
 * @returns the session (the caller closes it), the host, the run as it is now and the lease.
 * @throws whatever {@link connectForRun} and {@link ensureLease} throw.
 */
export async function leaseForDispatch(ports: Ports, run: RunRow, forWrite: boolean, deadline: Deadline) {
  const connection = await connectForRun(ports, run, deadline.upTo(HOST_CONNECT_MS));
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
