import { describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import type { RunView } from '../../shared/api.ts';
import type { PolicyProfileView } from '../../shared/policy.ts';
import { evidenceBundle, seedMemory, testProvider } from './support/anticipation-app.ts';
import { partiesForEachTest, workerdPorts } from './support/edge-client.ts';

// A run's console page shows its memories (issue 34): the owner's own statements anticipation
// brought, every prediction the verifier refused with its reason in words (the owner's record,
// never the agent's), or why anticipation was off; and what the agent suggested remembering.

const parties = partiesForEachTest();
const EDGE = 'http://127.0.0.1:8787';
const ORIGIN = 'http://127.0.0.1:8127';
const AISLE = 'I prefer aisle seats on flights.';
const MEALS = 'I am vegetarian, so flight meals must be vegetarian.';

/** Brings the aisle memory as copied, then a compound of both memories citing the meals one. */
const provider = testProvider('test/console-compound', (request) => {
  const aisle = request.memories.find((m) => m.statement === AISLE);
  const meals = request.memories.find((m) => m.statement === MEALS);
  return aisle && meals
    ? [
        { memory_id: aisle.id, statement: AISLE },
        { memory_id: meals.id, statement: `${MEALS} ${AISLE}` },
        { memory_ids: [aisle.id, meals.id], statement: 'both' },
      ]
    : [];
});
const app = createApp(() => ({ ...workerdPorts(), anticipator: provider }));

async function call<Body>(method: string, path: string, token: string, json?: unknown): Promise<{ status: number; body: Body }> {
  const answer = await app.request(`${EDGE}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(json !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
  });
  return { status: answer.status, body: (await answer.json()) as Body };
}

async function runPageOf(runId: string): Promise<string> {
  const signIn = await app.request(`${EDGE}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: EDGE },
    body: new URLSearchParams({ token: parties.owner.token }).toString(),
  });
  const cookie = (signIn.headers.get('Set-Cookie') ?? '').split(';')[0] ?? '';
  const page = await app.request(`${EDGE}/console/runs/${runId}`, { headers: { Cookie: cookie } });
  expect(page.status).toBe(200);
  return page.text();
}

describe('a run’s memories on its console page', () => {
  it('shows the brought statement, the refused compound and two-id predictions with their reasons, and the agent’s suggestion', async () => {
    await seedMemory(parties.owner.id, AISLE);
    await seedMemory(parties.owner.id, MEALS);
    const policy = await call<PolicyProfileView>('GET', '/v1/policy-profiles/default', parties.operator.token);
    expect((await call('POST', '/v1/memory-evidence', parties.operator.token, await evidenceBundle(provider.id, policy.body))).status).toBe(201);
    const run = await call<RunView>('POST', '/v1/runs', parties.owner.token, {
      profile_id: 'memories',
      intent: 'Book flights with vegetarian meals',
      origins: [ORIGIN],
    });
    expect(run.body.anticipated.map((m) => m.statement)).toEqual([AISLE]);
    const claimed = await call<RunView>('POST', '/v1/runs/claim', parties.agent.token, { run_id: run.body.id });
    expect(claimed.status).toBe(200);
    const reported = await call<RunView>('POST', `/v1/runs/${run.body.id}/report`, parties.agent.token, {
      status: 'completed',
      summary: 'booked',
      memories: [{ statement: 'The airline’s site says seat 12C is an aisle seat.', page_derived: true }],
    });
    expect(reported.status).toBe(200);

    const page = await runPageOf(run.body.id);
    expect(page).toContain('Brought to the agent as your own statements (test/console-compound, policy default version');
    expect(page).toContain(`<li>${AISLE}</li>`);
    expect(page).toContain('it joined this memory with another one');
    expect(page).toContain('it did not cite exactly one memory');
    expect(page).toContain('The airline’s site says seat 12C is an aisle seat. · pending · <strong>read on a page</strong>');
  });

  it('says why anticipation was off, and escapes what the agent suggested', async () => {
    await seedMemory(parties.owner.id, AISLE);
    const run = await call<RunView>('POST', '/v1/runs', parties.agent.token, { profile_id: 'memories', intent: 'Book flights', origins: [ORIGIN] });
    expect(run.body.anticipation).toMatchObject({ state: 'off', reason: 'agent_intent' });
    const reported = await call<RunView>('POST', `/v1/runs/${run.body.id}/report`, parties.agent.token, {
      status: 'completed',
      summary: 'booked',
      memories: [{ statement: '<img src=x onerror=alert(1)> prefers aisles', page_derived: false }],
    });
    expect(reported.status).toBe(200);
    const page = await runPageOf(run.body.id);
    expect(page).toContain('Anticipation was off:');
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt; prefers aisles · pending');
    expect(page).not.toContain('<img src=x');
  });
});
