import { createApp } from '../../../edge/app.ts';
import { HostCallError, type HostSession, HostUnreachable } from '../../../edge/host/host-session.ts';
import { DEFAULT_EDGE_CONFIG, type EdgeConfig, type Ports } from '../../../edge/ports.ts';
import { DEFAULT_QUOTAS } from '../../../edge/quotas/quota-config.ts';
import { workerdPorts } from './edge-client.ts';
import { hostPage } from './fake-host.ts';

/**
 * Stand-ins for a fleet of browser hosts, for edge tests over the real D1 (the e2e tests run real
 * hosts): each answers the wire methods the way a host does (leases with its own admission of
 * `maxBrowsers`, pages of `origin`, status, drain), keeps what it was sent, and can be taken down.
 */

type Params = Record<string, unknown>;

/** One stand-in host of the fleet. */
export interface StandInHost {
  readonly url: string;
  /** The id its hello announces (`HOST_ID`). */
  readonly hostId: string;
  /** Every command it got, in order. */
  readonly calls: { method: string; params: Params }[];
  /** While true, connecting fails (a dead or cut-off host). */
  down: boolean;
  /** Whether it was told to drain. */
  draining: boolean;
  /** Live leases by id: their profile. */
  readonly leases: Map<string, string>;
  /** What its next `lease.acquire` reports it restored (once), like a host that started the profile's browser. */
  restoreReport?: { restored_version: number | null; refused: Array<{ version: number; reason: string }> };
}

/** `count` stand-in hosts on made-up URLs unique to this fleet, each admitting `maxBrowsers`. */
export function standInFleet(count: number, options: { origin: string; maxBrowsers?: number }) {
  const tag = crypto.randomUUID().slice(0, 8);
  const maxBrowsers = options.maxBrowsers ?? 3;
  let revision = 0;
  let leaseSerial = 0;
  const hosts: StandInHost[] = Array.from({ length: count }, (_, index) => ({
    url: `ws://127.0.0.1:${20_000 + index}/fleet-${tag}`,
    hostId: `host-${tag}-${index + 1}`,
    calls: [],
    down: false,
    draining: false,
    leases: new Map(),
  }));
  const answer = (host: StandInHost, method: string, params: Params): unknown => {
    host.calls.push({ method, params });
    switch (method) {
      case 'lease.acquire': {
        if (host.draining) throw new HostCallError('host_draining', 'this host is draining');
        const leaseId = `lease_fleet${tag}${String(++leaseSerial).padStart(6, '0')}`;
        host.leases.set(leaseId, String(params.profile_id));
        const restore = host.restoreReport;
        host.restoreReport = undefined;
        return {
          lease_id: leaseId,
          profile_id: String(params.profile_id),
          generation: 1,
          expires_at_ms: Date.now() + 300_000,
          ...(restore ? { restore } : {}),
        };
      }
      case 'lease.renew':
        return {
          lease_id: String(params.lease_id),
          profile_id: host.leases.get(String(params.lease_id)) ?? 'p',
          generation: 1,
          expires_at_ms: Date.now() + 300_000,
        };
      case 'lease.release':
        return { released: host.leases.delete(String(params.lease_id)) };
      case 'page.navigate':
      case 'page.observe':
      case 'page.act':
        return hostPage(`${options.origin}/page`, ++revision);
      case 'host.status':
        return {
          host_id: host.hostId,
          browsers: host.leases.size,
          max_browsers: maxBrowsers,
          leases: host.leases.size,
          waiting: 0,
          headless: true,
          observations_served: 0,
          recent_observations_ms: [],
          verification_loads: 0,
          ceremonies_open: 0,
          version: '0.1.0',
          draining: host.draining,
          snapshots_pending: 0,
        };
      case 'host.drain':
        host.draining = true;
        return { draining: true, drained: host.leases.size === 0, leases: host.leases.size, snapshots_pending: 0 };
      case 'page.screenshot':
        throw new HostCallError('not_found', 'this stand-in host takes no screenshots');
      default:
        throw new Error(`the stand-in host does not serve ${method}`);
    }
  };
  const dial = (url: string) => ({
    connect: async (): Promise<HostSession> => {
      const host = hosts.find((candidate) => candidate.url === url);
      if (!host || host.down) throw new HostUnreachable(`cannot reach the browser host at ${url}`);
      return { hostId: host.hostId, call: async (method: string, params: Params) => answer(host, method, params), close: () => {} } as unknown as HostSession;
    },
  });
  return { hosts, urls: hosts.map((host) => host.url), dial };
}

/** The Worker's app over the real D1 with `fleet` as its hosts and `config` over the defaults; answers `{status, retryAfter, body}`. */
export function fleetApp(fleet: ReturnType<typeof standInFleet>, config: Partial<EdgeConfig> = {}) {
  const ports = (): Ports => ({
    ...workerdPorts(),
    dial: fleet.dial,
    config: {
      ...DEFAULT_EDGE_CONFIG,
      hostUrls: fleet.urls,
      admissionWaitMs: 300,
      quotas: { ...DEFAULT_QUOTAS, leasedBrowsersPerOwner: 100, openRunsPerOwner: 100, runsPerMinutePerOwner: 100, runsPerMinutePerAgent: 100 },
      ...config,
    },
  });
  const app = createApp(ports);
  const request = async <Body = unknown>(method: string, path: string, token: string, body?: unknown) => {
    const response = await app.request(`http://edge.test${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, retryAfter: response.headers.get('Retry-After'), body: (await response.json()) as Body };
  };
  return { app, ports, request };
}
