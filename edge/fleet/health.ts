import { and, eq, sql } from 'drizzle-orm';
import type { HostStatus } from '../../shared/protocol.ts';
import { type HostRow, hosts } from '../db/schema.ts';
import { HOST_CALL_MS, HOST_CONNECT_MS } from '../deadline.ts';
import { HostCallError, HostNoAnswer, type HostSession, HostUnreachable } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { fleetHosts } from './registry.ts';

/**
 * Checks of the fleet's hosts (issue 32): the cron pass asks every host for `host.status`, and a
 * call that cannot reach its host counts as a failed check too. `HOST_UNREACHABLE_AFTER_CHECKS`
 * failed checks in a row make a host `unreachable` (its profiles move on their next lease); a good
 * check makes it `healthy` again, or `draining` / `drained` as the host itself reports. A host an
 * operator drains stays draining: a check that finds it serving again tells it to drain again.
 */

/** How long one check may take, in ms: connecting, then `host.status`. */
export const HOST_CHECK_MS = 3_000;

/** What one check pass found: hosts asked, and how many answered. */
export interface FleetCheckReport {
  readonly checked: number;
  readonly healthy: number;
}

/**
 * Most checks under way at once: a Worker invocation keeps at most six outbound connections open
 * (the rest would wait for one anyway, their timers running), so a fleet of 64 is checked six at
 * a time, each within {@link HOST_CHECK_MS}.
 */
const CHECKS_AT_ONCE = 6;

/** Asks every host of the fleet for its status (at most 64, six at a time); never throws. */
export async function checkFleet(ports: Ports): Promise<FleetCheckReport> {
  const fleet = await fleetHosts(ports);
  let healthy = 0;
  let next = 0;
  const worker = async () => {
    while (next < fleet.length) {
      const host = fleet[next++]!;
      if ((await checkHost(ports, host).catch(() => undefined)) !== undefined) healthy += 1;
    }
  };
  await Promise.all(Array.from({ length: Math.min(CHECKS_AT_ONCE, fleet.length) }, worker));
  return { checked: fleet.length, healthy };
}

/**
 * Asks one host for `host.status` and records the answer (or the failure) on its row.
 * @returns the status, or undefined when the host did not answer.
 */
export async function checkHost(ports: Ports, host: HostRow): Promise<HostStatus | undefined> {
  let session: HostSession | undefined;
  try {
    session = await ports.dial(host.url).connect(Math.min(HOST_CONNECT_MS, HOST_CHECK_MS));
    let status = await session.call('host.status', {}, HOST_CHECK_MS);
    // Drained by an operator but serving again (restarted): it drains again.
    if (!status.draining && (host.state === 'draining' || host.state === 'drained')) {
      await session.call('host.drain', {}, HOST_CALL_MS);
      status = await session.call('host.status', {}, HOST_CHECK_MS);
    }
    await noteStatus(ports, host, status, session.hostId);
    return status;
  } catch (error) {
    if (!(error instanceof HostUnreachable || error instanceof HostNoAnswer || error instanceof HostCallError)) throw error;
    await noteFailedCheck(ports, host.id, error.message);
    return undefined;
  } finally {
    session?.close();
  }
}

/** Records a good check: the host's figures, and its state as it reports it. */
export async function noteStatus(ports: Ports, host: HostRow, status: HostStatus, reportedHostId: string): Promise<void> {
  const idle = status.leases === 0 && status.ceremonies_open === 0 && status.snapshots_pending === 0;
  const state = status.draining ? (idle ? 'drained' : 'draining') : 'healthy';
  await ports.db
    .update(hosts)
    .set({
      state,
      reportedHostId,
      version: status.version,
      maxBrowsers: status.max_browsers,
      browsers: status.browsers,
      leases: status.leases,
      ceremonies: status.ceremonies_open,
      failedChecks: 0,
      lastError: null,
      checkedAt: ports.clock.now(),
    })
    .where(eq(hosts.id, host.id));
}

/**
 * Counts one failed check of host `hostId` (one conditional update): at
 * `HOST_UNREACHABLE_AFTER_CHECKS` in a row it is `unreachable`, unless an operator drained it: a
 * draining or drained host keeps that state (it gets no placements either way), so that when it
 * comes back, restarted and serving, the next check drains it again instead of taking it back.
 * @returns whether the host is unreachable now (by state, or by its count of failed checks).
 */
export async function noteFailedCheck(ports: Ports, hostId: string, reason: string): Promise<boolean> {
  const limit = ports.config.hostUnreachableAfterChecks;
  await ports.db
    .update(hosts)
    .set({
      failedChecks: sql`${hosts.failedChecks} + 1`,
      state: sql`CASE WHEN ${hosts.state} IN ('draining', 'drained') THEN ${hosts.state} WHEN ${hosts.failedChecks} + 1 >= ${limit} THEN 'unreachable' ELSE ${hosts.state} END`,
      lastError: reason.slice(0, 300),
      checkedAt: ports.clock.now(),
    })
    .where(eq(hosts.id, hostId));
  const row = await ports.db.select({ state: hosts.state, failedChecks: hosts.failedChecks }).from(hosts).where(eq(hosts.id, hostId)).get();
  return row === undefined || row.state === 'unreachable' || row.failedChecks >= limit;
}

/** A host that failed checks answered a call: healthy again (only when it was marked otherwise). */
export async function noteReachable(ports: Ports, hostId: string): Promise<void> {
  await ports.db
    .update(hosts)
    .set({ failedChecks: 0, lastError: null, state: sql`CASE WHEN ${hosts.state} = 'unreachable' THEN 'healthy' ELSE ${hosts.state} END` })
    .where(and(eq(hosts.id, hostId), sql`${hosts.failedChecks} > 0`));
}

/**
 * Records the id host `hostId` announced in its signed hello (`HOST_ID`) when the registry has
 * another or none: snapshot tokens name that id, so the host a profile is placed on must be known
 * by it before its first snapshot arrives. One conditional update; none when it is known already.
 */
export async function noteReportedHostId(ports: Ports, hostId: string, reportedHostId: string): Promise<void> {
  await ports.db
    .update(hosts)
    .set({ reportedHostId })
    .where(and(eq(hosts.id, hostId), sql`(${hosts.reportedHostId} IS NULL OR ${hosts.reportedHostId} <> ${reportedHostId})`));
}
