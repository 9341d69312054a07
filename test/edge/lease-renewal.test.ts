import { describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import { HostCallError } from '../../edge/host/host-session.ts';
import { partiesForEachTest, poster, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';

// A run's lease renewal is sent back to back with the call's command when the expiry on record
// outlasts the call (edge/pipeline/lease.ts `ensureLease`). When the host answers it `lease_lost`
// (here: the host forgot every lease, as after a restart), a read goes again on a fresh lease, and
// a write fails `lease_lost`: it is sent once, on the lease it was planned on, never on a new one.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8126';

function stack() {
  let revision = 0;
  let leases = 0;
  const live = new Set<string>();
  const host = scriptedHost(async (method, params) => {
    if (method === 'lease.acquire') {
      const leaseId = `lease_renewal0000${++leases}`;
      live.add(leaseId);
      return { lease_id: leaseId, profile_id: String(params.profile_id), generation: leases, expires_at_ms: Date.now() + 300_000 };
    }
    if (!live.has(String(params.lease_id))) throw new HostCallError('lease_lost', 'no such lease; nothing was dispatched');
    if (method === 'lease.renew') return { lease_id: String(params.lease_id), profile_id: 'p', generation: leases, expires_at_ms: Date.now() + 300_000 };
    if (method === 'page.observe' || method === 'page.navigate' || method === 'page.act') {
      return { ...hostPage(`${ORIGIN}/page`, ++revision), snapshot: '- button "Go" [ref=e2]' };
    }
    return { released: true };
  });
  const app = createApp(() => workerdPorts(host.connector));
  const post = poster(app);
  const sent = (method: string) => host.calls.filter((call) => call.method === method).map((call) => String(call.params.lease_id ?? ''));
  return { post, sent, revision: () => revision, forgetLeases: () => live.clear(), calls: host.calls };
}

describe('a lease renewal sent with the command', () => {
  it('answered lease_lost: a read goes again on a fresh lease; a write fails lease_lost, sent once on its own lease', async () => {
    const { post, sent, revision, forgetLeases, calls } = stack();
    const run = await post('/v1/runs', parties.owner.token, { profile_id: 'renewal', intent: 'renew leases', origins: [ORIGIN] });
    const propose = (tool: string, args: unknown) =>
      post(`/v1/runs/${run.body.id}/tool-calls`, parties.agent.token, { tool, version: '1.4.0', arguments: args });
    expect((await propose('browser.navigate', { url: `${ORIGIN}/page` })).status).toBe(200);
    expect(sent('lease.acquire')).toHaveLength(1);

    forgetLeases();
    const observed = await propose('browser.observe', {});
    expect(observed).toMatchObject({ status: 200, body: { state: 'succeeded' } });
    expect(sent('lease.renew')).toEqual(['lease_renewal00001']);
    expect(sent('page.observe')).toEqual(['lease_renewal00001', 'lease_renewal00002']);
    expect(sent('lease.acquire')).toHaveLength(2);

    const parked = await propose('browser.act', { action: 'click', revision: revision(), reference: 'e2' });
    expect(parked).toMatchObject({ status: 202, body: { state: 'waiting_for_approval' } });
    forgetLeases();
    const before = calls.length;
    const approved = await post(`/v1/approvals/${parked.body.approval_id}/decision`, parties.owner.token, { decision: 'approve' });
    expect(approved).toMatchObject({ status: 200, body: { tool_call: { state: 'failed', error: { code: 'lease_lost' } } } });
    expect(
      calls
        .slice(before)
        .map((call) => `${call.method} ${String(call.params.lease_id ?? '')}`)
        .sort(),
    ).toEqual(['lease.renew lease_renewal00002', 'page.act lease_renewal00002']);
  });
});
