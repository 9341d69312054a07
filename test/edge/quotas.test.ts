import { env } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import { createApp } from '../../edge/app.ts';
import type { HostConnector } from '../../edge/host/host-session.ts';
import { DEFAULT_EDGE_CONFIG, type Ports } from '../../edge/ports.ts';
import { DEFAULT_QUOTAS, type QuotaConfig } from '../../edge/quotas/quota-config.ts';
import { fireDueSchedules } from '../../edge/schedules/schedules.ts';
import type { RunView } from '../../shared/api.ts';
import type { ErrorBody } from '../../shared/errors.ts';
import { call, partiesForEachTest, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';
import { ORIGIN, PAGE, SCHEDULE, SEVEN_AM } from './support/run-fixture.ts';

// Quotas and rate limits per owner and per agent, and a busy profile as its own refusal
// (README "Security"). The app runs in workerd over the real D1 with small limits; the host is
// the test bindings' closed port, so a call that gets past the checks fails host_unavailable.

const parties = partiesForEachTest();

/** The Worker's app with `quotas` over the defaults (and a stand-in host when given). */
function appWith(quotas: Partial<QuotaConfig>, host?: HostConnector) {
  const app = createApp(() => ({ ...workerdPorts(host), config: { ...DEFAULT_EDGE_CONFIG, quotas: { ...DEFAULT_QUOTAS, ...quotas } } }) satisfies Ports);
  return async <Body = unknown>(method: string, path: string, token: string, body?: unknown) => {
    const response = await app.request(`http://edge.test${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: response.status, retryAfter: response.headers.get('Retry-After'), body: (await response.json()) as Body };
  };
}

/** A stand-in host that grants every lease and answers page commands with the feed. */
function leasingHost() {
  return scriptedHost(async (method, params) => {
    if (method === 'lease.acquire' || method === 'lease.renew') {
      return {
        lease_id: `lease_quota${String(params.run_id ?? params.lease_id).slice(-12)}`,
        profile_id: String(params.profile_id),
        generation: 1,
        expires_at_ms: Date.now() + 300_000,
      };
    }
    if (method.startsWith('page.')) return hostPage(PAGE, 3);
    return { released: true };
  }).connector;
}

describe('requests that arrive together', () => {
  const statuses = (answers: { status: number }[]) => answers.map((answer) => answer.status).sort();

  it('cannot all pass the per-agent run rate: exactly the limit is created', async () => {
    const request = appWith({ runsPerMinutePerAgent: 5 });
    const answers = await Promise.all(Array.from({ length: 20 }, () => request('POST', '/v1/runs', parties.agent.token, runBody())));
    expect(statuses(answers)).toEqual([...Array(5).fill(201), ...Array(15).fill(429)]);
    expect(await count('SELECT count(*) AS n FROM runs WHERE created_by = ?', parties.agent.id)).toBe(5);
  });

  it('cannot all pass the open-runs quota: exactly the limit is open, and refused runs leave no rows', async () => {
    const request = appWith({ openRunsPerOwner: 4 });
    const answers = await Promise.all(Array.from({ length: 12 }, () => request('POST', '/v1/runs', parties.owner.token, runBody())));
    expect(statuses(answers)).toEqual([...Array(4).fill(201), ...Array(8).fill(429)]);
    expect(await count('SELECT count(*) AS n FROM runs WHERE owner_id = ?', parties.owner.id)).toBe(4);
    expect(await count('SELECT count(*) AS n FROM messages m JOIN runs r ON r.id = m.run_id WHERE r.owner_id = ?', parties.owner.id)).toBe(4);
  });

  it('cannot all pass the proposal rate, malformed bodies and envelopes included', async () => {
    const request = appWith({ proposalsPerMinutePerAgent: 10 });
    const run = await request<RunView>('POST', '/v1/runs', parties.owner.token, runBody());
    const path = `/v1/runs/${run.body.id}/tool-calls`;
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        request('POST', path, parties.agent.token, index % 2 === 0 ? '{not json' : { tool: 'browser.navigate', version: '1.3.0', arguments: { url: 12 } }),
      ),
    );
    expect(answers.filter((answer) => answer.status === 429)).toHaveLength(10);
    expect(await count('SELECT count(*) AS n FROM tool_calls WHERE run_id = ?', run.body.id)).toBeLessThanOrEqual(10);
    expect(await request('POST', path, parties.agent.token, { tool: 'nope' })).toMatchObject({ status: 429, body: { error: { code: 'rate_limited' } } });
  });

  it('counts an admitted proposal in the agent and the owner window alike, and a refused one in neither', async () => {
    const request = appWith({ proposalsPerMinutePerAgent: 2, proposalsPerMinutePerOwner: 10 });
    const run = await request<RunView>('POST', '/v1/runs', parties.owner.token, runBody());
    const path = `/v1/runs/${run.body.id}/tool-calls`;
    const windowOf = async (key: string) => count('SELECT count AS n FROM rate_windows WHERE key = ?', key);
    for (let index = 0; index < 3; index++) await request('POST', path, parties.agent.token, { tool: 'nope' });
    // The second admission filled the agent's window; it was still counted in the owner's.
    expect(await windowOf(`agent:${parties.agent.id}:proposals`)).toBe(2);
    expect(await windowOf(`owner:${parties.owner.id}:proposals`)).toBe(2);
  });

  it('cannot all take a browser: at most QUOTA_LEASED_BROWSERS_PER_OWNER, and one run per profile', async () => {
    const request = appWith({}, leasingHost());
    const onProfiles = await Promise.all(
      ['b1', 'b2', 'b3', 'b4', 'b5'].map((profile) => request<RunView>('POST', '/v1/runs', parties.owner.token, runBody(profile))),
    );
    const observe = (runId: string) =>
      request<ErrorBody>('POST', `/v1/runs/${runId}/tool-calls`, parties.agent.token, { tool: 'browser.observe', version: '1.2.0', arguments: {} });
    const answers = await Promise.all(onProfiles.map((run) => observe(run.body.id)));
    expect(statuses(answers)).toEqual([200, 200, 429, 429, 429]);
    expect(answers.filter((answer) => answer.status === 429).every((answer) => answer.body.error.code === 'quota_exceeded' && answer.retryAfter !== null)).toBe(
      true,
    );

    const stranger = { owner: parties.strangerOwner.token, agent: parties.strangerAgent.token };
    const sameProfile = await Promise.all([0, 1, 2].map(() => request<RunView>('POST', '/v1/runs', stranger.owner, runBody('shared'))));
    const onShared = await Promise.all(
      sameProfile.map((run) =>
        request<ErrorBody>('POST', `/v1/runs/${run.body.id}/tool-calls`, stranger.agent, { tool: 'browser.observe', version: '1.2.0', arguments: {} }),
      ),
    );
    expect(statuses(onShared)).toEqual([200, 409, 409]);
    expect(onShared.filter((answer) => answer.status === 409).every((answer) => answer.body.error.code === 'profile_in_use')).toBe(true);
  });
});

const count = async (sql: string, ...binds: unknown[]) =>
  Number(
    (
      await env.DB.prepare(sql)
        .bind(...binds)
        .first<{ n: number }>()
    )?.n,
  );
const runBody = (profile = 'feed') => ({ profile_id: profile, intent: 'read my feed', origins: [ORIGIN] });

describe('runs created per minute', () => {
  it('past the per-agent rate: 429 rate_limited with Retry-After, and no run is created', async () => {
    const request = appWith({ runsPerMinutePerAgent: 3 });
    for (let index = 0; index < 3; index++) expect((await request('POST', '/v1/runs', parties.agent.token, runBody())).status).toBe(201);
    const refused = await request<ErrorBody>('POST', '/v1/runs', parties.agent.token, runBody());
    expect(refused).toMatchObject({ status: 429, body: { error: { code: 'rate_limited' } } });
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(60);
    expect(await count('SELECT count(*) AS n FROM runs WHERE created_by = ?', parties.agent.id)).toBe(3);
    // Counted for GET /metrics (governed_refusals_total{code="rate_limited"}).
    await vi.waitFor(async () => expect(await count("SELECT count AS n FROM refusal_counts WHERE code = 'rate_limited'")).toBeGreaterThanOrEqual(1));
    // The owner's other agent is not limited by this agent's rate.
    expect((await request('POST', '/v1/runs', parties.secondAgent.token, runBody())).status).toBe(201);
  });

  it("past the per-owner rate, counted over all the owner's principals", async () => {
    const request = appWith({ runsPerMinutePerOwner: 2 });
    expect((await request('POST', '/v1/runs', parties.owner.token, runBody())).status).toBe(201);
    expect((await request('POST', '/v1/runs', parties.agent.token, runBody())).status).toBe(201);
    expect(await request('POST', '/v1/runs', parties.secondAgent.token, runBody())).toMatchObject({ status: 429, body: { error: { code: 'rate_limited' } } });
    // Another owner is not limited by this one.
    expect((await request('POST', '/v1/runs', parties.strangerOwner.token, runBody())).status).toBe(201);
  });
});

describe('open runs per owner', () => {
  it('past the limit: 429 quota_exceeded with Retry-After; ending a run makes room', async () => {
    const request = appWith({ openRunsPerOwner: 2 });
    const first = await request<RunView>('POST', '/v1/runs', parties.owner.token, runBody());
    expect((await request('POST', '/v1/runs', parties.owner.token, runBody())).status).toBe(201);
    const refused = await request<ErrorBody>('POST', '/v1/runs', parties.owner.token, runBody());
    expect(refused).toMatchObject({ status: 429, body: { error: { code: 'quota_exceeded' } } });
    expect(refused.retryAfter).not.toBeNull();
    expect((await request('POST', `/v1/runs/${first.body.id}/cancel`, parties.owner.token)).status).toBe(200);
    expect((await request('POST', '/v1/runs', parties.owner.token, runBody())).status).toBe(201);
  });
});

describe('proposals per minute', () => {
  it('past the per-agent rate, even malformed proposals are refused 429 before anything is stored', async () => {
    const request = appWith({ proposalsPerMinutePerAgent: 3 });
    const run = await request<RunView>('POST', '/v1/runs', parties.owner.token, runBody());
    for (let index = 0; index < 3; index++) {
      const rejected = await request('POST', `/v1/runs/${run.body.id}/tool-calls`, parties.agent.token, {
        tool: 'browser.navigate',
        version: '1.2.0',
        arguments: {},
      });
      expect(rejected.status).toBe(400);
    }
    const refused = await request<ErrorBody>('POST', `/v1/runs/${run.body.id}/tool-calls`, parties.agent.token, {
      tool: 'browser.navigate',
      version: '1.2.0',
      arguments: {},
    });
    expect(refused).toMatchObject({ status: 429, body: { error: { code: 'rate_limited' } } });
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(await count('SELECT count(*) AS n FROM tool_calls WHERE run_id = ?', run.body.id)).toBe(3);
  });
});

describe('a rejected proposal', () => {
  it('keeps a bounded excerpt of its arguments and the hash of the whole, not 200 KiB', async () => {
    const runId = (await call<RunView>('POST', '/v1/runs', { token: parties.owner.token, body: runBody() })).body.id;
    const huge = { url: 'x'.repeat(200 * 1024) };
    const refused = await call<ErrorBody>('POST', `/v1/runs/${runId}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.navigate', version: '1.2.0', arguments: huge },
    });
    expect(refused.status).toBe(400);
    const stored = await env.DB.prepare(
      'SELECT arguments, arguments_hash, length(arguments) AS size, length(error_message) AS message FROM tool_calls WHERE run_id = ?',
    )
      .bind(runId)
      .first<{ arguments: string; arguments_hash: string; size: number; message: number }>();
    expect(stored!.size).toBeLessThan(4 * 1024);
    expect(stored!.message).toBeLessThanOrEqual(2048);
    expect(JSON.parse(stored!.arguments)).toMatchObject({ truncated: true, bytes: JSON.stringify(huge).length });
    expect(stored!.arguments_hash).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('a busy profile', () => {
  /** An owner's run on PAGE that the database says holds a lease until `expiresAt` (epoch ms). */
  async function leasedRun(profile: string, expiresAt = Date.now() + 120_000, deadlineAt?: number) {
    const runId = (await call<RunView>('POST', '/v1/runs', { token: parties.owner.token, body: runBody(profile) })).body.id;
    await env.DB.prepare(
      "UPDATE runs SET state = 'running', lease_id = ?, lease_expires_at = ?, latest_url = ?, deadline_at = coalesce(?, deadline_at) WHERE id = ?",
    )
      .bind(`lease_${runId}`, expiresAt, PAGE, deadlineAt ?? null, runId)
      .run();
    return runId;
  }
  const observe = (runId: string) =>
    appWith({})<ErrorBody>('POST', `/v1/runs/${runId}/tool-calls`, parties.agent.token, { tool: 'browser.observe', version: '1.2.0', arguments: {} });

  it('is refused 409 profile_in_use naming the run that holds it, Retry-After until its lease expires, and nothing is stored', async () => {
    const holder = await leasedRun('feed', Date.now() + 90_000);
    const waiting = (await call<RunView>('POST', '/v1/runs', { token: parties.owner.token, body: runBody('feed') })).body.id;
    const refused = await observe(waiting);
    expect(refused).toMatchObject({ status: 409, body: { error: { code: 'profile_in_use', details: { run_id: holder } } } });
    expect(refused.body.error.message).toContain(holder);
    expect(Number(refused.retryAfter)).toBeGreaterThan(80);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(90);
    expect(await count('SELECT count(*) AS n FROM tool_calls WHERE run_id = ?', waiting)).toBe(0);
  });

  it("is free at once when the holder reports: the next run's call goes through", async () => {
    const holder = await leasedRun('feed');
    const next = (await call<RunView>('POST', '/v1/runs', { token: parties.owner.token, body: runBody('feed') })).body.id;
    expect((await observe(next)).status).toBe(409);
    const report = await call('POST', `/v1/runs/${holder}/report`, { token: parties.agent.token, body: { status: 'completed', summary: 'done' } });
    expect(report.status).toBe(200);
    expect(await count('SELECT count(*) AS n FROM runs WHERE id = ? AND lease_id IS NULL', holder)).toBe(1);
    expect(await observe(next)).toMatchObject({ status: 200, body: { state: 'failed', error: { code: 'host_unavailable' } } });
  });

  it('a holder past its deadline is ended and its lease released, so the next run does not wait for the TTL', async () => {
    const holder = await leasedRun('feed', Date.now() + 120_000, Date.now() - 1_000);
    const next = (await call<RunView>('POST', '/v1/runs', { token: parties.owner.token, body: runBody('feed') })).body.id;
    expect((await observe(next)).status).toBe(200);
    expect(await env.DB.prepare('SELECT state, lease_id FROM runs WHERE id = ?').bind(holder).first()).toEqual({ state: 'deadline_exceeded', lease_id: null });
  });

  it("an owner's runs hold at most QUOTA_LEASED_BROWSERS_PER_OWNER browsers: 429 quota_exceeded until one lease ends", async () => {
    const expiresAt = Date.now() + 30_000;
    await leasedRun('inbox', expiresAt);
    await leasedRun('calendar', Date.now() + 60_000);
    const third = (await call<RunView>('POST', '/v1/runs', { token: parties.owner.token, body: runBody('feed') })).body.id;
    const refused = await observe(third);
    expect(refused).toMatchObject({ status: 429, body: { error: { code: 'quota_exceeded' } } });
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(30);
    // A lapsed lease does not count.
    await env.DB.prepare("UPDATE runs SET lease_expires_at = ? WHERE profile_id = 'inbox' AND owner_id = ?")
      .bind(Date.now() - 1, parties.owner.id)
      .run();
    expect((await observe(third)).status).toBe(200);
  });
});

describe('scheduled runs', () => {
  it("count against the owner's open runs: a firing past the quota queues nothing", async () => {
    const ports: Ports = { ...workerdPorts(), config: { ...DEFAULT_EDGE_CONFIG, quotas: { ...DEFAULT_QUOTAS, openRunsPerOwner: 2 } } };
    for (const hour of [7, 8, 9]) {
      const created = await call('POST', '/v1/schedules', { token: parties.owner.token, body: { ...SCHEDULE, cron: `0 ${hour} * * *` } });
      expect(created.status).toBe(201);
    }
    await call('POST', '/v1/runs', { token: parties.owner.token, body: runBody() });
    expect((await fireDueSchedules(ports, SEVEN_AM)).length).toBe(1);
    expect(await count("SELECT count(*) AS n FROM runs WHERE owner_id = ? AND state = 'queued'", parties.owner.id)).toBe(2);
    // The next firing finds the owner at the quota: nothing is queued, nothing is left behind.
    expect(await fireDueSchedules(ports, SEVEN_AM + 3_600_000)).toEqual([]);
    expect(await count('SELECT count(*) AS n FROM runs WHERE owner_id = ?', parties.owner.id)).toBe(2);
    expect(await count('SELECT count(*) AS n FROM messages m JOIN runs r ON r.id = m.run_id WHERE r.owner_id = ?', parties.owner.id)).toBe(2);
  });
});
