import { describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import type { Ports } from '../../edge/ports.ts';
import { partiesForEachTest, poster, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';

// The one read of a proposal (edge/pipeline/proposal-context.ts) on a run whose stored results
// are large: more than one value may hold (D1 refuses strings over 2 MB), so the act's target is
// read row by row instead, and the act still goes to the owner bound to its target.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8125';

describe('a proposal on a run with large stored results', () => {
  it('binds an act to its target when the results of its revision are over 1.5 MB together', async () => {
    const filler = `- paragraph [ref=e9]: ${'x'.repeat(190_000)}`;
    const host = scriptedHost(async (method, params) => {
      if (method === 'lease.acquire' || method === 'lease.renew') {
        return { lease_id: 'lease_large0000001', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
      }
      // Every read is revision 1 (windows of one capture), each about 190 KB.
      if (method.startsWith('page.')) return { ...hostPage(`${ORIGIN}/big`, 1), snapshot: `- button "Save" [ref=e2]\n${filler}` };
      return { released: true };
    });
    const app = createApp(() => ({ ...workerdPorts(host.connector), config: { ...workerdPorts().config, resultBudgetBytes: 1_000_000 } }) satisfies Ports);
    const post = poster(app);
    const run = await post('/v1/runs', parties.owner.token, { profile_id: 'large', intent: 'save', origins: [ORIGIN] });
    const propose = (tool: string, args: unknown) =>
      post(`/v1/runs/${run.body.id}/tool-calls`, parties.agent.token, { tool, version: '1.4.0', arguments: args });
    expect((await propose('browser.navigate', { url: `${ORIGIN}/big` })).status).toBe(200);
    for (let read = 0; read < 9; read++) expect((await propose('browser.observe', {})).status).toBe(200);
    const parked = await propose('browser.act', { action: 'click', revision: 1, reference: 'e2' });
    expect(parked).toMatchObject({ status: 202, body: { phases: { target: { role: 'button', name: 'Save' } } } });
  });
});
