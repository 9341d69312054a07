import { and, eq, inArray, sql } from 'drizzle-orm';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type HostRow, hosts, profilePlacements } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { canonicalHostUrl } from './host-url.ts';

/**
 * The fleet's registry of browser hosts (issue 32): the hosts listed in `HOST_URLS` (registered
 * on first use under an id derived from the URL, so every edge agrees on it) and the ones an
 * operator registered (`POST /v1/hosts`). A configured host no longer listed is out of the fleet:
 * it gets no placements, and profiles placed on it move on their next lease.
 */

/** The registry id of a configured host: `hst_` and the first 20 hex digits of its URL's SHA-256. */
export async function configuredHostId(url: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(url)));
  return `hst_${[...digest.slice(0, 10)].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

/** Whether `host` is in the fleet now: registered by an operator, or listed in `HOST_URLS`. */
export function inFleet(ports: Ports, host: HostRow): boolean {
  return host.source === 'operator' || ports.config.hostUrls.includes(host.url);
}

/**
 * Every host in the fleet, registering the configured ones the table lacks (one insert, only when
 * one is missing; racing edges insert the same rows, so nothing conflicts).
 */
export async function fleetHosts(ports: Ports): Promise<HostRow[]> {
  let rows = await ports.db.select().from(hosts).all();
  const missing = ports.config.hostUrls.filter((url) => !rows.some((row) => row.url === url));
  if (missing.length > 0) {
    const now = ports.clock.now();
    const values = await Promise.all(missing.map(async (url) => ({ id: await configuredHostId(url), url, source: 'config' as const, createdAt: now })));
    await ports.db.insert(hosts).values(values).onConflictDoNothing();
    rows = await ports.db.select().from(hosts).all();
  }
  return rows.filter((row) => inFleet(ports, row));
}

/** One host of the fleet by registry id. @throws DomainError('not_found') */
export async function fleetHost(ports: Ports, hostId: string): Promise<HostRow> {
  const row = (await fleetHosts(ports)).find((host) => host.id === hostId);
  if (!row) throw new DomainError('not_found', `no browser host ${hostId} in the fleet`);
  return row;
}

/**
 * Registers a host by URL (the operator API). A URL already registered (or configured) is not
 * added twice: a draining or drained one is taken back into service, a configured one no longer
 * listed in `HOST_URLS` becomes an operator host (same id, so its placements still name it), any
 * other is answered as it is. `created` says whether a row was added.
 * @throws DomainError('invalid_request') for a URL that is not ws:// or wss://.
 */
export async function registerHost(ports: Ports, request: { url: string; label?: string }): Promise<{ host: HostRow; created: boolean }> {
  const url = normalHostUrl(request.url);
  const existing = (await ports.db.select().from(hosts).where(eq(hosts.url, url)).all())[0];
  if (existing) {
    if (!inFleet(ports, existing)) {
      // Out of the fleet until now: adopted, or a registration would answer a host it cannot show.
      await ports.db
        .update(hosts)
        .set({ source: 'operator' })
        .where(and(eq(hosts.id, existing.id), eq(hosts.source, 'config')));
    }
    if (existing.state === 'draining' || existing.state === 'drained') {
      await ports.db
        .update(hosts)
        .set({ state: 'healthy', failedChecks: 0 })
        .where(and(eq(hosts.id, existing.id), inArray(hosts.state, ['draining', 'drained'])));
    }
    const host = (await ports.db.select().from(hosts).where(eq(hosts.id, existing.id)).get()) ?? existing;
    return { host, created: false };
  }
  const row = { id: newId('hst'), url, source: 'operator' as const, label: request.label ?? '', createdAt: ports.clock.now() };
  await ports.db.insert(hosts).values(row).onConflictDoNothing();
  const host = await ports.db.select().from(hosts).where(eq(hosts.url, url)).get();
  if (!host) throw new DomainError('not_found', `the host ${url} was removed while it was being registered`);
  return { host, created: host.id === row.id };
}

/**
 * Removes an operator-registered host from the registry. Profiles placed on it move on their next
 * lease (restored from their newest snapshot). A configured host cannot be removed this way.
 * @throws DomainError('not_found'); DomainError('invalid_request') for a host listed in `HOST_URLS`.
 */
export async function removeHost(ports: Ports, hostId: string): Promise<{ removed: true; placements: number }> {
  const host = await ports.db.select().from(hosts).where(eq(hosts.id, hostId)).get();
  if (!host) throw new DomainError('not_found', `no browser host ${hostId}`);
  if (host.source === 'config' && inFleet(ports, host)) {
    throw new DomainError('invalid_request', `host ${hostId} is listed in HOST_URLS; remove it there (or drain it with POST /v1/hosts/${hostId}/drain)`);
  }
  const [placed] = await ports.db.select({ n: sql<number>`count(*)` }).from(profilePlacements).where(eq(profilePlacements.hostId, hostId)).all();
  await ports.db.delete(hosts).where(eq(hosts.id, hostId));
  return { removed: true, placements: Number(placed?.n ?? 0) };
}

/**
 * Marks a host draining (no new placements; profiles on it move on their next lease once their
 * snapshots are written). Idempotent; a drained host stays drained.
 * @returns whether the state changed.
 */
export async function markDraining(ports: Ports, hostId: string): Promise<boolean> {
  const changed = await ports.db
    .update(hosts)
    .set({ state: 'draining' })
    .where(and(eq(hosts.id, hostId), inArray(hosts.state, ['healthy', 'unreachable'])))
    .run();
  return rowsChanged(changed) === 1;
}

/**
 * A host URL as the registry keeps it: ws:// or wss://, no credentials, no fragment.
 * @throws DomainError('invalid_request')
 */
export function normalHostUrl(raw: string): string {
  const canonical = canonicalHostUrl(raw);
  if ('problem' in canonical) throw new DomainError('invalid_request', `url: ${canonical.problem}`);
  return canonical.url;
}
