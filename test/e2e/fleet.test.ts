import { describe, expect } from 'vitest';
import { hostProfileId } from '../../edge/profiles/bindings.ts';
import { type AccountSite, accountSiteDefinition, startAccountSite } from '../../scripts/account-site.ts';
import { type ApiClient, observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import type { LocalHost } from '../../scripts/local-stack.ts';
import { signInThroughLiveView } from '../../scripts/person-in-live-view.ts';
import { GrantView, HostList, type HostView, type ToolCallView } from '../../shared/api.ts';
import { runReaches, type Stacked, stackTest } from '../support/stack-fixture.ts';
import { until } from '../support/until.ts';

// A fleet of three real browser hosts on this machine (issue 32), each its own process, port and
// data directory, host-3 in a network namespace of its own so it can be cut off; the edge under
// `wrangler dev` with its local D1 and R2. Placement spreads runs and a full fleet answers 429;
// a host that comes back after being declared unreachable cannot write a snapshot; a drained
// host gets no new placements; and a profile signed in on a host that is killed is served,
// still signed in, by another.

const it = stackTest({
  site: startAccountSite,
  siteDefinitions: (site) => [accountSiteDefinition(site.origin)],
  hosts: 3,
  isolatedHosts: ['host-3'],
  hostVars: { HOST_PERSON_DEBUGGING: '1', HOST_CEREMONY_POLL_MS: '500', HOST_SNAPSHOT_INTERVAL_MS: '2000' },
  edgeVars: { ADMISSION_WAIT_MS: '1500', QUOTA_LEASED_BROWSERS_PER_OWNER: '20', QUOTA_OPEN_RUNS_PER_OWNER: '40', QUOTA_RUNS_PER_MINUTE_PER_OWNER: '60' },
});

type World = Pick<Stacked<AccountSite>, 'stack' | 'site' | 'agent' | 'owner' | 'operator' | 'ownerId'>;

/** The fleet as the operator sees it. */
async function fleet(operator: ApiClient): Promise<HostView[]> {
  return (await operator.request('GET', '/v1/hosts', HostList)).body.hosts;
}

/** The local host process a registry id stands for (by the id its hello announced). */
async function localHost({ stack, operator }: Pick<World, 'stack' | 'operator'>, registryId: string): Promise<LocalHost> {
  const view = (await fleet(operator)).find((host) => host.id === registryId);
  const host = stack.hosts.find((candidate) => candidate.id === view?.reported_host_id || candidate.url === view?.url);
  if (!host) throw new Error(`no local host for ${registryId}`);
  return host;
}

/** The agent's proposal, as the HTTP answer: status, `Retry-After` and body. */
async function propose(agent: ApiClient, runId: string, tool: string, args: Record<string, unknown>) {
  const response = await fetch(`${agent.baseUrl}/v1/runs/${runId}/tool-calls`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${agent.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ tool, version: '1.4.0', arguments: args }),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('Retry-After'),
    body: (await response.json()) as ToolCallView & { error?: { code: string } },
  };
}

/** A run of the owner on `profile` that navigated to `path` of the account site; the call as answered. */
async function runAt({ owner, agent, site }: Pick<World, 'owner' | 'agent' | 'site'>, profile: string, path = '/public') {
  const run = await owner.createRun({ profile_id: profile, intent: `read ${path}`, origins: [site.origin], deadline_ms: 900_000 });
  return { run, answer: await propose(agent, run.id, 'browser.navigate', { url: `${site.origin}${path}` }) };
}

/** The newest snapshot version stored for the owner's `profile` and when, or undefined. */
async function newestSnapshot({ stack, ownerId }: Pick<World, 'stack' | 'ownerId'>, profile: string) {
  const [rows] = await stack.queryD1(
    `SELECT version, generation, created_at FROM profile_snapshots WHERE host_profile_id = '${await hostProfileId(ownerId, profile)}' ORDER BY version DESC LIMIT 1`,
  );
  return rows?.[0] as { version: number; generation: number; created_at: number } | undefined;
}

describe('a fleet of three hosts', () => {
  it('spreads nine runs over the three hosts; the tenth waits, gets 429 fleet_full with Retry-After, and is served once a lease ends', async ({
    owner,
    agent,
    site,
    operator,
  }) => {
    const served: Array<{ runId: string; hostId: string }> = [];
    let tenthRunId: string | undefined;
    try {
      for (let index = 0; index < 9; index++) {
        const { run, answer } = await runAt({ owner, agent, site }, `spread-${index}`);
        served.push({ runId: run.id, hostId: String(answer.body.phases?.dispatch?.host_id) });
        expect(answer).toMatchObject({ status: 200, body: { state: 'succeeded' } });
      }
      const counts = new Map<string, number>();
      for (const entry of served) counts.set(entry.hostId, (counts.get(entry.hostId) ?? 0) + 1);
      expect([...counts.values()]).toEqual([3, 3, 3]);
      expect((await fleet(operator)).map((host) => host.free_slots)).toEqual([0, 0, 0]);

      const started = Date.now();
      const tenth = await runAt({ owner, agent, site }, 'spread-9');
      tenthRunId = tenth.run.id;
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
      expect(tenth.answer.status).toBe(429);
      expect(tenth.answer.body.error?.code).toBe('fleet_full');
      expect(Number(tenth.answer.retryAfter)).toBeGreaterThanOrEqual(1);
      // Refused, it recorded no call and left the run as it was.
      expect((await agent.run(tenth.run.id)).state).toBe('running');

      await agent.report(served[0]!.runId, 'completed', 'read the public page');
      // The freed host may still be writing the ended lease's snapshot for a moment: the agent
      // tries again as the answer says (Retry-After on a 429, `retryable` on admission_full).
      let again = await propose(agent, tenth.run.id, 'browser.navigate', { url: `${site.origin}/public` });
      for (let attempt = 0; attempt < 5 && again.body.state !== 'succeeded'; attempt++) {
        expect(again.body.error?.code).toMatch(/^(fleet_full|admission_full)$/);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        again = await propose(agent, tenth.run.id, 'browser.navigate', { url: `${site.origin}/public` });
      }
      expect(again).toMatchObject({ status: 200, body: { state: 'succeeded', phases: { dispatch: { host_id: served[0]!.hostId } } } });
    } finally {
      // Later tests need the fleet's slots back whatever happened here.
      for (const runId of [...served.slice(1).map((entry) => entry.runId), ...(tenthRunId ? [tenthRunId] : [])]) {
        await agent.raw('POST', `/v1/runs/${runId}/report`, { status: 'completed', summary: 'done' });
      }
    }
  });

  it('a host that comes back after being declared unreachable cannot write its snapshot, closes its browser of the profile, and does not serve it again', async ({
    stack,
    owner,
    agent,
    site,
    operator,
    ownerId,
  }) => {
    // A run whose profile lands on host-3, the one that can be cut off.
    let placed: { runId: string; registryId: string } | undefined;
    for (let attempt = 0; attempt < 6 && placed === undefined; attempt++) {
      const { run, answer } = await runAt({ owner, agent, site }, `comeback-${attempt}`);
      expect(answer).toMatchObject({ status: 200, body: { state: 'succeeded' } });
      const registryId = String(answer.body.phases.dispatch?.host_id);
      if ((await localHost({ stack, operator }, registryId)).id === 'host-3') placed = { runId: run.id, registryId };
      else await agent.report(run.id, 'completed', 'not on host-3');
    }
    expect(placed).toBeDefined();
    const profile = (await agent.run(placed!.runId)).profile_id;
    const host3 = stack.hosts.find((host) => host.id === 'host-3')!;
    // Its periodic snapshot (every 2 s while the lease lasts) is stored at generation 1 first.
    await until(
      async () => (await newestSnapshot({ stack, ownerId }, profile))?.generation === 1 || undefined,
      () => 'a first snapshot from host-3',
      30_000,
    );

    await host3.cut();
    // A fresh browser elsewhere shows no page of the run yet: the agent navigates back to it.
    const moved = await propose(agent, placed!.runId, 'browser.navigate', { url: `${site.origin}/public` });
    expect(moved).toMatchObject({ status: 200, body: { state: 'succeeded' } });
    expect(moved.body.phases.dispatch?.host_id).not.toBe(placed!.registryId);
    const view = await agent.run(placed!.runId);
    expect(view.placement).toMatchObject({ generation: 2, reason: 'host_unreachable', previous_host_id: placed!.registryId });
    expect((await fleet(operator)).find((host) => host.id === placed!.registryId)?.state).toBe('unreachable');
    const movedAt = Date.now();

    await host3.restore();
    // Its next periodic write is refused (stale generation): it closes the profile's browser.
    const hostProfile = await hostProfileId(ownerId, profile);
    await until(
      () => host3.output().some((line) => line.includes(`profile ${hostProfile}: the edge refused generation 1`)),
      () => `host-3 to be refused its stale snapshot and close the profile's browser; its output:\n${host3.output().slice(-20).join('\n')}`,
      30_000,
      250,
    );
    const [late] = await stack.queryD1(
      `SELECT count(*) AS n FROM profile_snapshots WHERE host_profile_id = '${await hostProfileId(ownerId, profile)}' AND generation = 1 AND created_at > ${movedAt}`,
    );
    expect(Number(late?.[0]?.n)).toBe(0);
    const after = await propose(agent, placed!.runId, 'browser.observe', {});
    expect(after.body.phases.dispatch?.host_id).toBe(moved.body.phases.dispatch?.host_id);
    await agent.report(placed!.runId, 'completed', 'done');
    // The cron pass finds host-3 answering again: healthy.
    await stack.triggerCron();
    await until(
      async () => (await fleet(operator)).find((host) => host.id === placed!.registryId)?.state === 'healthy' || undefined,
      () => 'host-3 healthy again',
      30_000,
    );
  });

  it('a drained host gets no new placements; its running lease finishes there; the profile moves on its next lease', async ({
    stack,
    owner,
    agent,
    site,
    operator,
  }) => {
    const { run, answer } = await runAt({ owner, agent, site }, 'drained-profile');
    expect(answer).toMatchObject({ status: 200, body: { state: 'succeeded' } });
    const drainedId = String(answer.body.phases.dispatch?.host_id);
    const drained = await operator.request('POST', `/v1/hosts/${drainedId}/drain`, HostList.shape.hosts.element);
    expect(['draining', 'drained']).toContain(drained.body.state);

    const other = await runAt({ owner, agent, site }, 'fresh-after-drain');
    expect(other.answer).toMatchObject({ status: 200, body: { state: 'succeeded' } });
    expect(other.answer.body.phases.dispatch?.host_id).not.toBe(drainedId);
    // The running lease finishes on the draining host.
    const still = await propose(agent, run.id, 'browser.observe', {});
    expect(still.body).toMatchObject({ state: 'succeeded', phases: { dispatch: { host_id: drainedId } } });
    await agent.report(run.id, 'completed', 'done');
    await agent.report(other.run.id, 'completed', 'done');
    // With nothing held there any more, the host reports drained at its next check.
    await until(
      async () => {
        await stack.triggerCron();
        return (await fleet(operator)).find((host) => host.id === drainedId)?.state === 'drained' || undefined;
      },
      () => 'the host to report drained',
      30_000,
      1_000,
    );
    const next = await runAt({ owner, agent, site }, 'drained-profile');
    expect(next.answer).toMatchObject({ status: 200, body: { state: 'succeeded' } });
    expect(next.answer.body.phases.dispatch?.host_id).not.toBe(drainedId);
    expect((await agent.run(next.run.id)).placement).toMatchObject({ generation: 2, reason: 'host_draining', previous_host_id: drainedId });
    await agent.report(next.run.id, 'completed', 'done');
    // The operator restarts the drained host and takes it back into service.
    const drainedHost = await localHost({ stack, operator }, drainedId);
    await drainedHost.kill('SIGTERM');
    await drainedHost.exited();
    await drainedHost.start();
    const url = (await fleet(operator)).find((host) => host.id === drainedId)!.url;
    expect(await operator.raw('POST', '/v1/hosts', { url })).toMatchObject({ status: 200, body: { id: drainedId, state: 'healthy' } });
  });

  it("the owner signs in through a host; that host is killed; the run's next calls get a browser on another host, signed in, with no new sign-in and no duplicate effect", async ({
    stack,
    site,
    owner,
    agent,
    operator,
    ownerId,
  }) => {
    const run = await owner.createRun({ profile_id: 'mover', intent: 'File the weekly report titled "Week 49"', origins: [site.origin], deadline_ms: 900_000 });
    await owner.request('POST', '/v1/grants', GrantView, {
      tool: 'browser.act',
      actions: ['type', 'click'],
      origin: site.origin,
      max_uses: 10,
      ttl_ms: 3_600_000,
    });
    const walled = await propose(agent, run.id, 'browser.navigate', { url: `${site.origin}/reports/new` });
    expect(walled.body).toMatchObject({ state: 'failed', error: { code: 'authentication_required' } });
    expect(await owner.waitForNotices(run.id)).toHaveLength(1);
    const signedInOn = String((await agent.run(run.id)).placement?.host_id);
    const host = await localHost({ stack, operator }, signedInOn);
    const signInsBefore = site.counters().sign_ins;
    // Through the live view, as an owner signs in: it reaches a host in its own namespace too.
    await signInThroughLiveView({ consoleLink: (await operator.consoleLink(ownerId)).url, username: 'alice', password: 'alice-pass', timeoutMs: 60_000 });
    await runReaches(agent, run.id, ['queued', 'running']);
    expect(site.counters().sign_ins).toBe(signInsBefore + 1);

    const form = await propose(agent, run.id, 'browser.navigate', { url: `${site.origin}/reports/new` });
    expect(form.body).toMatchObject({ state: 'succeeded', phases: { dispatch: { host_id: signedInOn } } });
    const snapshot = observationOf(form.body);
    await propose(agent, run.id, 'browser.act', {
      action: 'type',
      revision: snapshot.revision,
      reference: refOf(snapshot.snapshot, 'textbox', 'Title'),
      text: 'Week 49',
    });
    const typed = observationOf((await agent.propose(run.id, 'browser.observe', {}, '1.4.0')).body);
    const filed = await propose(agent, run.id, 'browser.act', {
      action: 'click',
      revision: typed.revision,
      reference: refOf(typed.snapshot, 'button', 'File report'),
    });
    expect(filed.body).toMatchObject({ state: 'succeeded' });
    expect(site.counters().filed['alice@example.test']).toEqual(['Week 49']);
    // The lease's periodic snapshot after the filing is stored before the host dies.
    const filedAt = Date.now();
    await until(
      async () => ((await newestSnapshot({ stack, ownerId }, 'mover'))?.created_at ?? 0) > filedAt || undefined,
      () => 'a snapshot after the filing',
      30_000,
    );

    await host.kill('SIGKILL');
    // The next read gets a fresh browser on another host: it shows no page of the run yet, and
    // says so (as after a host restart); navigating back asks nobody.
    const observed = await propose(agent, run.id, 'browser.observe', {});
    expect(observed.body).toMatchObject({ state: 'failed', retryable: true, error: { code: 'page_changed' } });
    expect(observed.body.error?.message).toContain('moved to another host');
    const movedTo = observed.body.phases.dispatch?.host_id;
    expect(movedTo).toBeDefined();
    expect(movedTo).not.toBe(signedInOn);
    const reports = await propose(agent, run.id, 'browser.navigate', { url: `${site.origin}/reports` });
    expect(reports.body).toMatchObject({ state: 'succeeded', phases: { dispatch: { host_id: movedTo } } });
    const page = observationOf(reports.body).snapshot;
    expect(page).toContain('Signed in as alice@example.test');
    expect(page.match(/Week 49/g)).toHaveLength(1);
    expect(site.counters().sign_ins).toBe(signInsBefore + 1);
    expect(site.counters().reports_filed).toBe(1);
    expect((await agent.run(run.id)).placement).toMatchObject({ generation: 2, reason: 'host_unreachable', previous_host_id: signedInOn });
    await agent.report(run.id, 'completed', 'filed Week 49');
  });
});
