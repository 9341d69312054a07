import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { resultForVersion } from '../../edge/pipeline/result-version.ts';
import type { RunView, ToolCallView } from '../../shared/api.ts';
import { Observation, ObservationV1_1, ObservationV1_4, OmittedObservationV1_1, ToolResultV1_1 } from '../../shared/observation.ts';
import { call, type Parties, seedParties } from './support/edge-client.ts';

// Tool versions (ADR-0159, DESIGN.md section 3): 1.2.0 is additive over 1.1.0. A call pinned to
// 1.1.0 is accepted and answered in the 1.1.0 result shape, {revision, url, title, window,
// snapshot}: without the settle report and condition that 1.2.0 added. Its phases still record
// how it settled.

const observation: Observation = {
  revision: 7,
  url: 'http://127.0.0.1:8123/settle/ticking-clock.html',
  title: 'Ticking clock',
  settle: { outcome: 'bound_expired', elapsed_ms: 2004, pending_at_entry: 0, overflow: false, expired_by: 'deadline' },
  window: { scope: { start_node: 0, end_node: 3, total_nodes: 3 }, truncated: false },
  snapshot: '- heading "Ticking clock" [level=1] [ref=e2]\n- paragraph [ref=e3]: "Time: 2000 ms"\n- button "Do nothing" [ref=e4]',
  condition: { status: 'not_observed', observations: 1, elapsed_ms: 0, window_scope: { start_node: 0, end_node: 3, total_nodes: 3 } },
};
const { settle: _settle, condition: _condition, ...v1_1 } = observation;

describe('resultForVersion', () => {
  it('answers a 1.2.0 call with the whole observation, settle report and condition included', () => {
    expect(resultForVersion('1.2.0', observation, 64 * 1024)).toEqual(observation);
  });

  it('answers a 1.1.0 call in the strict 1.1.0 shape: no settle report, no condition', () => {
    const result = resultForVersion('1.1.0', observation, 64 * 1024);
    expect(result).toEqual(v1_1);
    expect(ObservationV1_1.safeParse(result).success).toBe(true);
    // And the 1.2.0 contract does not accept it: the shapes never blur into each other.
    expect(Observation.safeParse(result).success).toBe(false);
    expect(ObservationV1_1.safeParse(observation).success).toBe(false);
  });

  it('applies the result budget to the 1.1.0 shape: whole or explicitly omitted, never clipped', () => {
    const size = new TextEncoder().encode(JSON.stringify(v1_1)).byteLength;
    expect(resultForVersion('1.1.0', observation, size)).toEqual(v1_1);
    const omitted = resultForVersion('1.1.0', observation, size - 1);
    expect(omitted).toEqual({ omitted: 'observation_over_budget', revision: 7, size_bytes: size, budget_bytes: size - 1 });
    expect(OmittedObservationV1_1.safeParse(omitted).success).toBe(true);
    // A 1.2.0 call over budget keeps its condition whole.
    expect(resultForVersion('1.2.0', observation, 10)).toMatchObject({ omitted: 'observation_over_budget', condition: observation.condition });
  });
});

describe('the 1.5.0 additions to an observation (issue 33)', () => {
  const withMedia: Observation = {
    ...observation,
    incomplete: ['closed_shadow_root'],
    screenshot: { artifact_id: 'art_screenshot1', mime_type: 'image/jpeg', width: 1280, height: 720, bytes: 48_213 },
    downloads: [{ artifact_id: 'art_download1', file_name: 'invoice.pdf', mime_type: 'application/pdf', bytes: 12_345, state: 'saved' }],
  };
  const { screenshot: _screenshot, downloads: _downloads, ...v1_4 } = withMedia;

  it('reach a 1.5.0 call whole: screenshot and downloads included', () => {
    expect(resultForVersion('1.5.0', withMedia, 64 * 1024)).toEqual(withMedia);
  });

  it('never reach a call pinned to 1.4.0, which keeps exactly the 1.4.0 shape (incomplete included)', () => {
    const result = resultForVersion('1.4.0', withMedia, 64 * 1024);
    expect(result).toEqual(v1_4);
    expect(ObservationV1_4.safeParse(result).success).toBe(true);
    expect(ObservationV1_4.safeParse(withMedia).success).toBe(false);
  });

  it('never reach older pins either', () => {
    for (const version of ['1.3.0', '1.2.0', '1.1.0']) {
      const result = resultForVersion(version, withMedia, 64 * 1024);
      expect(result).not.toHaveProperty('screenshot');
      expect(result).not.toHaveProperty('downloads');
    }
  });
});

describe('GET /v1/tool-calls/{id} by pinned version', () => {
  let parties: Parties;
  let runId: string;

  beforeAll(async () => {
    parties = await seedParties();
    // Created by the owner, so the agent's turn has the owner's authority.
    const run = await call<RunView>('POST', '/v1/runs', {
      token: parties.owner.token,
      body: { profile_id: 'versions', intent: 'versions', origins: ['http://127.0.0.1:8123'] },
    });
    runId = run.body.id;
  });

  /** A finished observe call as dispatch records it, pinned to `version`. */
  async function storedCall(version: '1.1.0' | '1.2.0'): Promise<string> {
    const id = `call_version_${version.replaceAll('.', '_')}`;
    const now = Date.now();
    const { condition: _none, ...stored } = observation;
    await env.DB.prepare(
      `INSERT INTO tool_calls (id, run_id, principal_id, tool, version, arguments, arguments_hash, state, result, retryable, phases, created_at, updated_at)
       VALUES (?, ?, ?, 'browser.observe', ?, '{}', 'hash', 'succeeded', ?, 1, ?, ?, ?)`,
    )
      .bind(id, runId, parties.agent.id, version, JSON.stringify(stored), JSON.stringify({ settle: stored.settle }), now, now)
      .run();
    return id;
  }

  it('a call pinned to 1.1.0 is answered in the 1.1.0 shape, and its phases still record how it settled', async () => {
    const id = await storedCall('1.1.0');
    const answer = await call<ToolCallView>('GET', `/v1/tool-calls/${id}`, { token: parties.agent.token });
    expect(answer.status).toBe(200);
    expect(answer.body.version).toBe('1.1.0');
    expect(answer.body.result).toEqual(v1_1);
    expect(ToolResultV1_1.safeParse(answer.body.result).success).toBe(true);
    expect(answer.body.phases.settle).toEqual({ outcome: 'bound_expired', elapsed_ms: 2004, pending_at_entry: 0, overflow: false, expired_by: 'deadline' });
  });

  it('a call pinned to 1.2.0 carries the settle report on its observation, expired_by included', async () => {
    const id = await storedCall('1.2.0');
    const answer = await call<ToolCallView>('GET', `/v1/tool-calls/${id}`, { token: parties.agent.token });
    expect(answer.status).toBe(200);
    const result = answer.body.result;
    expect(result !== null && 'settle' in result ? result.settle : result).toEqual(observation.settle);
    expect(Observation.safeParse(answer.body.result).success).toBe(true);
  });

  it('a 1.1.0 proposal is accepted by its own schema and dispatched (here to an unreachable host)', async () => {
    const answer = await call<ToolCallView>('POST', `/v1/runs/${runId}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.observe', version: '1.1.0', arguments: {} },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ version: '1.1.0', state: 'failed', result: null, error: { code: 'host_unavailable' } });
  });
});
