import { env } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import { configuredHostId } from '../../edge/fleet/registry.ts';
import type { RunView } from '../../shared/api.ts';
import { call, errorBody, partiesForEachTest } from './support/edge-client.ts';
import { ORIGIN } from './support/run-fixture.ts';

// GET /metrics: the operator's counts in the Prometheus text format, read from the real D1 (and
// the hosts: here the one configured host is the bindings' closed port, so governed_host_up is 0
// for it; each host's samples carry its registry id as the `host` label).

const parties = partiesForEachTest();

/** The scrape as the operator reads it: status, content type and every sample line by name and labels. */
async function scrape() {
  const response = await call<{ text: string }>('GET', '/metrics', { token: parties.operator.token });
  const text = response.body.text;
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const sample = /^([a-z_]+)(\{[^}]*\})? (-?[0-9.e+]+)$/.exec(line);
    expect(sample, `a line the exposition format allows: ${line}`).not.toBeNull();
    samples.set(`${sample![1]}${sample![2] ?? ''}`, Number(sample![3]));
  }
  return { status: response.status, text, samples };
}

describe('GET /metrics', () => {
  it('is for the operator only', async () => {
    expect(await call('GET', '/metrics')).toEqual({ status: 401, body: errorBody('unauthenticated', 'send Authorization: Bearer <token>') });
    for (const kind of ['owner', 'agent'] as const) {
      expect(await call('GET', '/metrics', { token: parties[kind].token })).toEqual({
        status: 403,
        body: errorBody('forbidden', `this endpoint is for operator principals, not ${kind}`),
      });
    }
  });

  it('answers every family in the text format, with HELP and TYPE, and says the host is down when it is', async () => {
    const { status, text, samples } = await scrape();
    expect(status).toBe(200);
    for (const family of [
      'governed_tool_calls_total',
      'governed_settle_outcomes_total',
      'governed_approval_wait_seconds_sum',
      'governed_approvals_pending',
      'governed_grant_uses_total',
      'governed_refusals_total',
      'governed_runs',
      'governed_runs_leased',
      'governed_host_up',
      'governed_host_state',
      'governed_host_slots_free',
      'governed_host_placements',
    ]) {
      expect(text).toContain(`# TYPE ${family} `);
    }
    const hostId = await configuredHostId(env.HOST_URL);
    expect(samples.get(`governed_host_up{host="${hostId}"}`)).toBe(0);
    expect(samples.get(`governed_host_slots_free{host="${hostId}"}`)).toBeGreaterThan(0);
  });

  it('counts calls by tool and state, and refusals by code', async () => {
    const before = await scrape();
    const runId = (await call<RunView>('POST', '/v1/runs', { token: parties.owner.token, body: { profile_id: 'feed', intent: 'read', origins: [ORIGIN] } }))
      .body.id;
    const refused = await call('POST', `/v1/runs/${runId}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.navigate', version: '1.2.0', arguments: {} },
    });
    expect(refused.status).toBe(400);
    const observed = await call('POST', `/v1/runs/${runId}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.observe', version: '1.2.0', arguments: {} },
    });
    expect(observed.status).toBe(200);
    const counted = (samples: Map<string, number>, key: string) => samples.get(key) ?? 0;
    await vi.waitFor(async () => {
      const after = await scrape();
      const refusal = 'governed_refusals_total{code="invalid_arguments"}';
      expect(counted(after.samples, refusal)).toBe(counted(before.samples, refusal) + 1);
      const rejected = 'governed_tool_calls_total{tool="browser.navigate",state="rejected"}';
      expect(counted(after.samples, rejected)).toBe(counted(before.samples, rejected) + 1);
      const failed = 'governed_tool_calls_total{tool="browser.observe",state="failed"}';
      expect(counted(after.samples, failed)).toBe(counted(before.samples, failed) + 1);
    });
  });
});
