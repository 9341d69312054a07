import { describe, expect, it, vi } from 'vitest';
import { proposeToolCall } from '../../../edge/pipeline/propose.ts';
import { DEFAULT_EDGE_CONFIG, type Ports } from '../../../edge/ports.ts';
import { loadRun } from '../../../edge/runs/lifecycle.ts';
import type { RunView } from '../../../shared/api.ts';
import { backgroundSettled, call, partiesForEachTest, row, workerdPorts } from '../support/edge-client.ts';
import { hostPage, scriptedHost } from '../support/fake-host.ts';
import { ORIGIN } from '../support/sign-in-fixture.ts';

// The host's ceremony.begin may take tens of seconds (it first checks whether the saved session is
// still valid). The proposal that met the wall must not wait for it: it answers once the wait is
// recorded, within the tool deadline, and the ceremony begins in the background.

const TOOL_DEADLINE_MS = 3_000;

const parties = partiesForEachTest();

/** A host whose ceremony.begin answers only when the test lets it. */
function hostWithSlowCeremony() {
  let letBeginAnswer: () => void = () => {};
  const beginMayAnswer = new Promise<void>((resolve) => {
    letBeginAnswer = resolve;
  });
  let revision = 0;
  let beginAnswered = false;
  const host = scriptedHost(async (method, params) => {
    switch (method) {
      case 'lease.acquire':
      case 'lease.renew':
        return { lease_id: 'lease_slowceremony1', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
      case 'page.observe':
        return hostPage(`${ORIGIN}/`, ++revision);
      case 'page.navigate':
        return {
          ...hostPage(`${ORIGIN}/signin?next=/reports`, ++revision),
          sign_in: { origin: ORIGIN, reasons: [{ code: 'password_field', detail: 'a visible password field' }] },
        };
      case 'ceremony.begin':
        await beginMayAnswer;
        beginAnswered = true;
        return { ceremony_id: params.ceremony_id, state: 'awaiting_person' };
      default:
        return { released: true };
    }
  });
  return { ...host, letBeginAnswer, beginAnswered: () => beginAnswered };
}

describe('a proposal that meets a sign-in wall', () => {
  it('answers within the tool deadline while the host is still beginning the ceremony, which then notifies the owner once', async () => {
    const host = hostWithSlowCeremony();
    const ports: Ports = { ...workerdPorts(host.connector), config: { ...DEFAULT_EDGE_CONFIG, toolDeadlineMs: TOOL_DEADLINE_MS } };
    const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
    const created = await call<RunView>('POST', '/v1/runs', {
      token: parties.owner.token,
      body: { profile_id: 'slow', intent: 'file the weekly report', origins: [ORIGIN] },
    });
    expect(created.status).toBe(201);
    const runOf = () => loadRun(ports, agent, created.body.id);
    await proposeToolCall(ports, agent, await runOf(), { tool: 'browser.observe', version: '1.2.0', arguments: {} });

    const startedAt = Date.now();
    const outcome = await proposeToolCall(ports, agent, await runOf(), { tool: 'browser.navigate', version: '1.2.0', arguments: { url: `${ORIGIN}/reports` } });
    const answeredAfterMs = Date.now() - startedAt;

    expect(outcome.status).toBe(200);
    expect(outcome.call.state).toBe('failed');
    expect(outcome.call.errorCode).toBe('authentication_required');
    expect(answeredAfterMs).toBeLessThan(TOOL_DEADLINE_MS);
    // The ceremony was handed off: the host gets its begin after the answer, and is still on it.
    await vi.waitFor(() => expect(host.calls.some((c) => c.method === 'ceremony.begin')).toBe(true));
    expect(host.beginAnswered()).toBe(false);
    expect((await row('SELECT state FROM runs WHERE id = ?', created.body.id))?.state).toBe('waiting_for_authentication');
    expect((await row("SELECT count(*) AS n FROM sign_in_waits WHERE run_id = ? AND state = 'pending'", created.body.id))?.n).toBe(1);

    host.letBeginAnswer();
    await backgroundSettled();
    expect(host.beginAnswered()).toBe(true);
    expect((await row('SELECT count(*) AS n FROM notices WHERE run_id = ?', created.body.id))?.n).toBe(1);
    expect((await row("SELECT ceremony_state FROM sign_in_episodes WHERE owner_id = ? AND state = 'open'", parties.owner.id))?.ceremony_state).toBe(
      'awaiting_person',
    );
  });
});
