import { describe, expect, it } from 'vitest';
import { proposeToolCall } from '../../edge/pipeline/propose.ts';
import type { Ports } from '../../edge/ports.ts';
import { loadRun } from '../../edge/runs/lifecycle.ts';
import type { RunView } from '../../shared/api.ts';
import type { Observation } from '../../shared/observation.ts';
import { call, partiesForEachTest, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';

// An act whose postcondition needs several reads still reports its own settle outcome on the
// observation it returns (ADR-0159); the reads' count and time are in the condition report beside
// it. The host is a stand-in; D1 is real.

const ORIGIN = 'http://127.0.0.1:8125';
const PAGE = `${ORIGIN}/drafts`;
const parties = partiesForEachTest();

const ACT_SETTLE = { outcome: 'dom_quiet', elapsed_ms: 420, pending_at_entry: 1, overflow: false } as const;

/** Observes show "Saving", then "Saved" from the third read on; the act settles as ACT_SETTLE. */
function savingHost() {
  let revision = 0;
  let reads = 0;
  const page = (text: string, settle: Record<string, unknown>) => ({
    ...hostPage(PAGE, ++revision),
    settle,
    snapshot: `- main [ref=e1]:\n  - button "Save" [ref=e2]\n  - paragraph [ref=e3]: ${text}`,
  });
  return scriptedHost(async (method, params) => {
    switch (method) {
      case 'lease.acquire':
      case 'lease.renew':
        return { lease_id: 'lease_postsettle01', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
      case 'page.observe':
        reads++;
        return page(reads >= 3 ? 'Saved' : 'Saving', { outcome: 'not_waited', elapsed_ms: 0, pending_at_entry: 0, overflow: false });
      case 'page.act':
        return page('Saving', ACT_SETTLE);
      default:
        return { released: true };
    }
  });
}

describe('an act whose postcondition needs several reads', () => {
  it("returns the last read with the act's own settle report, the reads counted beside it", async () => {
    const host = savingHost();
    const ports: Ports = workerdPorts(host.connector);
    const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
    const created = await call<RunView>('POST', '/v1/runs', {
      token: parties.owner.token,
      body: { profile_id: 'drafts', intent: 'save my draft', origins: [ORIGIN] },
    });
    const runOf = () => loadRun(ports, agent, created.body.id);
    const observed = await proposeToolCall(ports, agent, await runOf(), { tool: 'browser.observe', version: '1.3.0', arguments: {} });
    const revision = (observed.call.result as Observation).revision;
    await call('POST', '/v1/grants', { token: parties.owner.token, body: { tool: 'browser.act', origin: ORIGIN, ttl_ms: 600_000, max_uses: 1 } });
    const act = await proposeToolCall(ports, agent, await runOf(), {
      tool: 'browser.act',
      version: '1.3.0',
      arguments: { action: 'click', revision, reference: 'e2', postcondition: { success: { kind: 'text', text: 'Saved' } } },
    });
    expect(act.call.state).toBe('succeeded');
    const result = act.call.result as Observation;
    expect(result.snapshot).toContain('Saved');
    expect(result.settle).toEqual(ACT_SETTLE);
    expect(result.condition).toMatchObject({ status: 'satisfied', observations: 3 });
    expect(act.call.phases).toMatchObject({ settle: ACT_SETTLE, postcondition: { status: 'satisfied', observations: 3 } });
  });
});
