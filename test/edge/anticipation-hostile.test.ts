import { describe, expect, it } from 'vitest';
import type { RunView } from '../../shared/api.ts';
import type { ErrorBody } from '../../shared/errors.ts';
import type { EvidenceRecordView } from '../../shared/memory-evidence.ts';
import type { PolicyProfileView } from '../../shared/policy.ts';
import { anticipationApp, evidenceBundle, seedMemory, type TestProvider } from './support/anticipation-app.ts';
import { partiesForEachTest } from './support/edge-client.ts';

// Anticipation at a run's start against hostile timing (issue 34): a run is written before its
// anticipation is decided (the provider may take seconds), so an agent claiming "the oldest
// queued run" in between must not get it without the owner's anticipated statements.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8123';
const AISLE = 'I prefer aisle seats on flights.';

/** A copying provider that answers only once `release()` is called; `asked` settles when it is called. */
function heldProvider(id: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let asked!: () => void;
  const called = new Promise<void>((resolve) => {
    asked = resolve;
  });
  const provider: TestProvider = {
    id,
    requests: [],
    async anticipate(request) {
      provider.requests.push(request);
      asked();
      await released;
      return { predictions: request.memories.map((m) => ({ memory_id: m.id, statement: m.statement })), costUsd: 0 };
    },
  };
  return { provider, release, called };
}

describe('anticipation against hostile timing', () => {
  it('an agent claiming the oldest queued run while its anticipation is being decided does not get it; after the decision it gets it with the statements', async () => {
    const aisle = await seedMemory(parties.owner.id, AISLE);
    const { provider, release, called } = heldProvider('test/held-1');
    const app = anticipationApp(provider);
    const policy = await app.request<PolicyProfileView>('GET', '/v1/policy-profiles/default', parties.operator.token);
    expect(
      (await app.request<EvidenceRecordView>('POST', '/v1/memory-evidence', parties.operator.token, await evidenceBundle(provider.id, policy.body))).status,
    ).toBe(201);

    const creating = app.request<RunView>('POST', '/v1/runs', parties.owner.token, { profile_id: 'memories', intent: 'Book flights', origins: [ORIGIN] });
    await called;
    const early = await app.request<RunView | ErrorBody>('POST', '/v1/runs/claim', parties.agent.token);
    release();
    const created = await creating;
    expect(created.body.anticipated).toEqual([{ memory_id: aisle, statement: AISLE }]);
    expect([early.status, (early.body as ErrorBody).error?.code]).toEqual([404, 'not_found']);

    const claimed = await app.request<RunView>('POST', '/v1/runs/claim', parties.agent.token);
    expect(claimed.status).toBe(200);
    expect(claimed.body.id).toBe(created.body.id);
    expect(claimed.body.anticipated).toEqual([{ memory_id: aisle, statement: AISLE }]);
  });
});
