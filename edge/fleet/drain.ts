import type { HostView } from '../../shared/api.ts';
import { HOST_CALL_MS, HOST_CONNECT_MS } from '../deadline.ts';
import type { HostSession } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { checkHost } from './health.ts';
import { viewsOf } from './host-views.ts';
import { fleetHost, markDraining } from './registry.ts';

/**
 * Drains a host (`POST /v1/hosts/{id}/drain`): marks it draining, so it gets no new placements
 * and the profiles on it move on their next lease, then tells the host (`host.drain`: its leases
 * finish, each profile is snapshotted as its hold ends). A host that cannot be told now is told
 * by the next check that reaches it. Idempotent.
 * @returns the host's view afterwards (`draining`, or `drained` once it reports nothing held).
 * @throws DomainError('not_found') for a host not in the fleet.
 */
export async function drainHost(ports: Ports, hostId: string): Promise<HostView> {
  const host = await fleetHost(ports, hostId);
  await markDraining(ports, host.id);
  let session: HostSession | undefined;
  try {
    session = await ports.dial(host.url).connect(HOST_CONNECT_MS);
    await session.call('host.drain', {}, HOST_CALL_MS);
  } catch {
    // Unreachable now: the next check that reaches it tells it again (edge/fleet/health.ts).
  } finally {
    session?.close();
  }
  await checkHost(ports, await fleetHost(ports, hostId));
  const [view] = await viewsOf(ports, [await fleetHost(ports, hostId)]);
  return view!;
}
