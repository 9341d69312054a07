import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { checkFleet, noteFailedCheck } from '../../../edge/fleet/health.ts';
import { placeProfile } from '../../../edge/fleet/placement.ts';
import { configuredHostId } from '../../../edge/fleet/registry.ts';
import type { RunView, ToolCallView } from '../../../shared/api.ts';
import type { ErrorBody } from '../../../shared/errors.ts';
import { partiesForEachTest } from '../support/edge-client.ts';
import { fleetApp, standInFleet } from '../support/fake-fleet.ts';

// Placement of profiles on a fleet of hosts (issue 32), over the real D1 with stand-in hosts:
// spreading, the full fleet's 429, affinity, moving off a lost host, and racing edges.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8125';

/** Starts a run on `profile` and navigates it once (its first lease). */
async function leasedRun(request: ReturnType<typeof fleetApp>['request'], profile: string) {
  const run = await request<RunView>('POST', '/v1/runs', parties.owner.token, { profile_id: profile, intent: 'use the fleet', origins: [ORIGIN] });
  expect(run.status).toBe(201);
  const navigated = await request<ToolCallView>('POST', `/v1/runs/${run.body.id}/tool-calls`, parties.agent.token, {
    tool: 'browser.navigate',
    version: '1.4.0',
    arguments: { url: `${ORIGIN}/page` },
  });
  return { run: run.body, navigated };
}

describe('placement on a fleet of hosts', () => {
  it('spreads nine runs over three hosts; the tenth waits, then gets 429 fleet_full with Retry-After, and is served once a lease ends', async () => {
    const fleet = standInFleet(3, { origin: ORIGIN });
    const { request } = fleetApp(fleet);
    const leased = [];
    for (let index = 0; index < 9; index++) {
      const { run, navigated } = await leasedRun(request, `spread-${index}`);
      expect(navigated).toMatchObject({ status: 200, body: { state: 'succeeded' } });
      leased.push({ run, hostId: navigated.body.phases.dispatch?.host_id });
    }
    const ids = await Promise.all(fleet.urls.map(configuredHostId));
    for (const id of ids) expect(leased.filter((entry) => entry.hostId === id)).toHaveLength(3);
    for (const host of fleet.hosts) expect(host.calls.filter((sent) => sent.method === 'lease.acquire')).toHaveLength(3);

    const tenth = await request<RunView>('POST', '/v1/runs', parties.owner.token, { profile_id: 'spread-9', intent: 'one too many', origins: [ORIGIN] });
    const refused = await request<ErrorBody>('POST', `/v1/runs/${tenth.body.id}/tool-calls`, parties.agent.token, {
      tool: 'browser.navigate',
      version: '1.4.0',
      arguments: { url: `${ORIGIN}/page` },
    });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('fleet_full');
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    // Nothing was recorded as dispatched for it.
    const calls = await env.DB.prepare('SELECT count(*) AS n FROM tool_calls WHERE run_id = ?').bind(tenth.body.id).first<{ n: number }>();
    expect(calls?.n).toBe(0);

    const report = await request('POST', `/v1/runs/${leased[0]!.run.id}/report`, parties.agent.token, { status: 'completed', summary: 'done' });
    expect(report.status).toBe(200);
    const served = await request<ToolCallView>('POST', `/v1/runs/${tenth.body.id}/tool-calls`, parties.agent.token, {
      tool: 'browser.navigate',
      version: '1.4.0',
      arguments: { url: `${ORIGIN}/page` },
    });
    expect(served).toMatchObject({ status: 200, body: { state: 'succeeded', phases: { dispatch: { host_id: leased[0]!.hostId } } } });
  });

  it('a claim answers 429 fleet_full while every slot of the fleet is held, and nothing changes', async () => {
    const fleet = standInFleet(1, { origin: ORIGIN, maxBrowsers: 1 });
    const { request, ports } = fleetApp(fleet);
    // The cron pass's check learns the host admits one browser (3 until a host says otherwise).
    expect(await checkFleet(ports())).toEqual({ checked: 1, healthy: 1 });
    await leasedRun(request, 'claim-holder');
    const queued = await request<RunView>('POST', '/v1/runs', parties.owner.token, {
      profile_id: 'claim-waiter',
      intent: 'queued for an agent',
      origins: [ORIGIN],
    });
    expect(queued.body.state).toBe('queued');
    const claim = await request<ErrorBody>('POST', '/v1/runs/claim', parties.agent.token);
    expect(claim.status).toBe(429);
    expect(claim.body.error.code).toBe('fleet_full');
    expect(claim.retryAfter).not.toBeNull();
    const run = await request<RunView>('GET', `/v1/runs/${queued.body.id}`, parties.owner.token);
    expect(run.body.state).toBe('queued');
  });

  it("keeps a profile on its host while that host is healthy, and the run's view shows the placement", async () => {
    const fleet = standInFleet(3, { origin: ORIGIN });
    const { request } = fleetApp(fleet);
    const first = await leasedRun(request, 'affinity');
    const hostId = first.navigated.body.phases.dispatch?.host_id;
    await request('POST', `/v1/runs/${first.run.id}/report`, parties.agent.token, { status: 'completed', summary: 'done' });
    // Other profiles fill the other hosts' slots less than this one's: affinity, not most-free.
    const second = await leasedRun(request, 'affinity');
    expect(second.navigated.body.phases.dispatch?.host_id).toBe(hostId);
    const view = await request<RunView>('GET', `/v1/runs/${second.run.id}`, parties.agent.token);
    expect(view.body.placement).toMatchObject({ host_id: hostId, generation: 1, reason: 'first_lease', previous_host_id: null });
  });

  it('moves a profile whose host stops answering to another host on the next call, at the next generation, with nothing sent to the lost one', async () => {
    const fleet = standInFleet(2, { origin: ORIGIN });
    const { request } = fleetApp(fleet);
    const { run, navigated } = await leasedRun(request, 'failover');
    const lostId = navigated.body.phases.dispatch?.host_id;
    const lostHost = (await Promise.all(fleet.urls.map(configuredHostId))).indexOf(lostId ?? '');
    expect(lostHost).toBeGreaterThanOrEqual(0);
    fleet.hosts[lostHost]!.down = true;
    const sentBefore = fleet.hosts[lostHost]!.calls.length;

    const observed = await request<ToolCallView>('POST', `/v1/runs/${run.id}/tool-calls`, parties.agent.token, {
      tool: 'browser.observe',
      version: '1.4.0',
      arguments: {},
    });
    expect(observed).toMatchObject({ status: 200, body: { state: 'succeeded' } });
    expect(observed.body.phases.dispatch?.host_id).not.toBe(lostId);
    expect(fleet.hosts[lostHost]!.calls.length).toBe(sentBefore);
    const acquired = fleet.hosts[1 - lostHost]!.calls.find((sent) => sent.method === 'lease.acquire');
    expect(acquired?.params.placement).toMatchObject({ generation: 2, restore: [] });
    const view = await request<RunView>('GET', `/v1/runs/${run.id}`, parties.owner.token);
    expect(view.body.placement).toMatchObject({ generation: 2, reason: 'host_unreachable', previous_host_id: lostId });
    const hosts = await request<{ hosts: Array<{ id: string; state: string }> }>('GET', '/v1/hosts', parties.operator.token);
    expect(hosts.body.hosts.find((host) => host.id === lostId)?.state).toBe('unreachable');
  });

  it('two edges racing to place one profile end with one placement', async () => {
    const fleet = standInFleet(3, { origin: ORIGIN });
    const { ports } = fleetApp(fleet);
    const profile = `race${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
    const placed = await Promise.all(Array.from({ length: 8 }, () => placeProfile(ports(), profile)));
    expect(new Set(placed.map((entry) => `${entry.hostId}@${entry.generation}`)).size).toBe(1);
    const rows = await env.DB.prepare('SELECT host_id, generation FROM profile_placements WHERE host_profile_id = ?').bind(profile).all();
    expect(rows.results).toHaveLength(1);

    // Racing to move it off a host that became unreachable: one move, one generation.
    const lost = placed[0]!.hostId;
    for (let failed = 0; failed < 2; failed++) await noteFailedCheck(ports(), lost, 'cut off');
    fleet.hosts[(await Promise.all(fleet.urls.map(configuredHostId))).indexOf(lost)]!.down = true;
    const moved = await Promise.all(Array.from({ length: 8 }, () => placeProfile(ports(), profile)));
    expect(new Set(moved.map((entry) => `${entry.hostId}@${entry.generation}`))).toEqual(new Set([`${moved[0]!.hostId}@2`]));
    expect(moved[0]!.hostId).not.toBe(lost);
  });

  it('with no healthy host at all, a call fails host_unavailable without being sent, and a lone host that comes back serves again at once', async () => {
    const fleet = standInFleet(1, { origin: ORIGIN });
    const { request } = fleetApp(fleet);
    const { run } = await leasedRun(request, 'lone');
    fleet.hosts[0]!.down = true;
    const failed = await request<ToolCallView>('POST', `/v1/runs/${run.id}/tool-calls`, parties.agent.token, {
      tool: 'browser.observe',
      version: '1.4.0',
      arguments: {},
    });
    expect(failed).toMatchObject({
      status: 200,
      body: { state: 'failed', error: { code: 'host_unavailable' }, retryable: true, phases: { dispatch: { outcome: 'not_sent' } } },
    });
    fleet.hosts[0]!.down = false;
    const served = await request<ToolCallView>('POST', `/v1/runs/${run.id}/tool-calls`, parties.agent.token, {
      tool: 'browser.observe',
      version: '1.4.0',
      arguments: {},
    });
    expect(served).toMatchObject({ status: 200, body: { state: 'succeeded' } });
    const view = await request<RunView>('GET', `/v1/runs/${run.id}`, parties.owner.token);
    expect(view.body.placement?.generation).toBe(1);
  });
});
