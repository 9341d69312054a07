import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { checkFleet } from '../../../edge/fleet/health.ts';
import { configuredHostId } from '../../../edge/fleet/registry.ts';
import type { HostView } from '../../../shared/api.ts';
import { partiesForEachTest } from '../support/edge-client.ts';
import { fleetApp, standInFleet } from '../support/fake-fleet.ts';

// The operator's hosts API (issue 32) against hosts that go away and come back, and HOST_URLS
// that change under it, over the real D1 with stand-in hosts.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8125';

describe('the hosts API', () => {
  it('a drained host stays drained while it cannot be reached, and is told to drain again when it comes back', async () => {
    const fleet = standInFleet(2, { origin: ORIGIN });
    const { request, ports } = fleetApp(fleet);
    await checkFleet(ports());
    const [id] = await Promise.all(fleet.urls.map(configuredHostId));
    const host = fleet.hosts[0]!;
    expect((await request<HostView>('POST', `/v1/hosts/${id}/drain`, parties.operator.token)).body.state).toBe('drained');
    // The operator stops the drained host; checks fail past the unreachable threshold.
    host.down = true;
    for (let pass = 0; pass < 4; pass++) await checkFleet(ports());
    const away = (await request<{ hosts: HostView[] }>('GET', '/v1/hosts', parties.operator.token)).body.hosts.find((each) => each.id === id);
    expect(away).toMatchObject({ state: 'drained', failed_checks: 4 });
    // It restarts, serving and not draining: the next check drains it again rather than placing profiles on it.
    host.down = false;
    host.draining = false;
    await checkFleet(ports());
    expect(host.draining).toBe(true);
    const back = (await request<{ hosts: HostView[] }>('GET', '/v1/hosts', parties.operator.token)).body.hosts.find((each) => each.id === id);
    expect(back).toMatchObject({ state: 'drained', failed_checks: 0 });
  });

  it('draining a host that cannot be reached marks it draining, not unreachable', async () => {
    const fleet = standInFleet(2, { origin: ORIGIN });
    const { request, ports } = fleetApp(fleet);
    await checkFleet(ports());
    const [id] = await Promise.all(fleet.urls.map(configuredHostId));
    fleet.hosts[0]!.down = true;
    for (let pass = 0; pass < 2; pass++) await checkFleet(ports());
    const drained = await request<HostView>('POST', `/v1/hosts/${id}/drain`, parties.operator.token);
    expect(drained).toMatchObject({ status: 200, body: { id, state: 'draining' } });
  });

  it('registering the URL of a host no longer listed in HOST_URLS takes it into the fleet as an operator host', async () => {
    const fleet = standInFleet(2, { origin: ORIGIN });
    await checkFleet(fleetApp(fleet).ports());
    const [first] = await Promise.all(fleet.urls.map(configuredHostId));
    // HOST_URLS now lists only the second host; the operator registers the first by its URL.
    const { request } = fleetApp(fleet, { hostUrls: [fleet.urls[1]!] });
    const registered = await request<HostView>('POST', '/v1/hosts', parties.operator.token, { url: fleet.urls[0]! });
    expect(registered).toMatchObject({ status: 200, body: { id: first, url: fleet.urls[0]!, source: 'operator', state: 'healthy' } });
    const listed = (await request<{ hosts: HostView[] }>('GET', '/v1/hosts', parties.operator.token)).body.hosts.map((each) => each.id);
    expect(listed).toContain(first);
    const rows = await env.DB.prepare('SELECT count(*) AS n FROM hosts WHERE url = ?').bind(fleet.urls[0]!).first<{ n: number }>();
    expect(rows?.n).toBe(1);
  });
});
