import { and, eq } from 'drizzle-orm';
import { type RunRow, runs } from '../db/schema.ts';
import { HOST_CONNECT_MS } from '../deadline.ts';
import { DomainError } from '../domain-error.ts';
import { type HostSession, HostUnreachable } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { hostProfileId } from '../profiles/bindings.ts';
import type { EarlyConnection } from './early-connection.ts';
import { noteFailedCheck } from './health.ts';
import { type PlacedHost, placeProfile } from './placement.ts';

/**
 * Connections to the host a profile is served on (issue 32). A connection that fails counts as a
 * failed check of that host; once the host is `unreachable` the profile moves to another host
 * (its placement's next generation) and the connection is made there instead. Nothing was sent to
 * the host that failed, so going elsewhere repeats nothing.
 */

/** A connection to the host serving a profile, and which host it is. */
export interface HostConnection {
  readonly session: HostSession;
  readonly host: { readonly id: string; readonly url: string };
}

/**
 * Connects to the host of `run`'s lease or reservation (where its page is), else to its profile's
 * placement. When that host cannot be reached, a second attempt confirms it; at
 * `HOST_UNREACHABLE_AFTER_CHECKS` failed checks the profile moves, the run's lease on the lost host
 * is forgotten (its next write fails `lease_lost`; a read acquires a lease on the new host) and
 * the run's reservation moves with it.
 * @param timeoutMs for each connection attempt, in ms.
 * @param early a session to the run's lease host opened before the call was recorded (see
 *   early-connection.ts): taken as the first attempt when it is to that host and it opened.
 * @returns the connection and the run as it is afterwards (its lease fields may have changed).
 * @throws HostUnreachable when no host can be reached or the fleet has no healthy host (nothing
 *   was sent either way).
 */
export async function connectForRun(ports: Ports, run: RunRow, timeoutMs: number, early?: EarlyConnection): Promise<HostConnection & { readonly run: RunRow }> {
  const profile = await hostProfileId(run.ownerId, run.profileId);
  const recorded =
    run.leaseHostId !== null && run.leaseHostUrl !== null
      ? { id: run.leaseHostId, url: run.leaseHostUrl }
      : await placeProfile(ports, profile).catch(asUnreachable);
  const target = 'hostId' in recorded ? { id: recorded.hostId, url: recorded.url } : recorded;
  const first = early !== undefined && early.host.id === target.id && early.host.url === target.url ? early.take() : undefined;
  const reached = await reach(ports, target, timeoutMs, first);
  if (reached) return { session: reached, host: target, run };
  const placed = await placeProfile(ports, profile, { avoid: target.id }).catch(asUnreachable);
  const moved: RunRow = { ...run, leaseId: null, leaseGeneration: null, leaseHostId: placed.hostId, leaseHostUrl: placed.url };
  await ports.db
    .update(runs)
    .set({ leaseId: null, leaseGeneration: null, leaseHostId: placed.hostId, leaseHostUrl: placed.url, updatedAt: ports.clock.now() })
    .where(and(eq(runs.id, run.id), eq(runs.leaseHostId, target.id)));
  const session = await ports.dial(placed.url).connect(timeoutMs);
  return { session, host: { id: placed.hostId, url: placed.url }, run: moved };
}

/**
 * Connects to the host `hostProfileId` is placed on (placing it when it is not), for a sign-in
 * ceremony, its live view or its maintenance: the ceremony follows the profile. Moves the profile
 * like {@link connectForRun} when its host is unreachable.
 * @throws HostUnreachable, also when the fleet has no healthy host.
 */
export async function connectToProfileHost(
  ports: Ports,
  profile: string,
  timeoutMs = HOST_CONNECT_MS,
): Promise<HostConnection & { readonly placed: PlacedHost }> {
  const placed = await placeProfile(ports, profile).catch(asUnreachable);
  const reached = await reach(ports, { id: placed.hostId, url: placed.url }, timeoutMs);
  if (reached) return { session: reached, host: { id: placed.hostId, url: placed.url }, placed };
  const moved = await placeProfile(ports, profile, { avoid: placed.hostId }).catch(asUnreachable);
  const session = await ports.dial(moved.url).connect(timeoutMs);
  return { session, host: { id: moved.hostId, url: moved.url }, placed: moved };
}

/**
 * Connects to `host`, trying a second time when the first attempt fails and the host is not yet
 * unreachable on record. `first`: the outcome of a first attempt already made (an early
 * connection, early-connection.ts), counted as such.
 * @returns the session, or undefined when the host is unreachable now (the profile should move).
 * @throws HostUnreachable when the host failed but is not (yet) counted unreachable.
 */
async function reach(
  ports: Ports,
  host: { id: string; url: string },
  timeoutMs: number,
  first?: Promise<{ readonly session: HostSession } | { readonly error: unknown }>,
): Promise<HostSession | undefined> {
  let lastError: HostUnreachable | undefined;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      if (attempt === 0 && first !== undefined) {
        const opened = await first;
        if ('error' in opened) throw opened.error;
        return opened.session;
      }
      return await ports.dial(host.url).connect(timeoutMs);
    } catch (error) {
      if (!(error instanceof HostUnreachable)) throw error;
      lastError = error;
      if (await noteFailedCheck(ports, host.id, error.message)) return undefined;
    }
  }
  throw lastError ?? new HostUnreachable(`cannot reach the browser host ${host.id}`);
}

/** A placement that found no healthy host, as the connection failure it is: nothing was sent. */
function asUnreachable(error: unknown): never {
  if (error instanceof DomainError && error.code === 'host_unavailable') throw new HostUnreachable(error.message);
  throw error;
}
