import { describe, expect, it } from 'vitest';
import type { RunView } from '../../shared/api.ts';
import type { ErrorBody } from '../../shared/errors.ts';
import { ANTICIPATION_CALL_BUDGET } from '../../shared/memories.ts';
import type { EvidenceBundle, EvidenceRecordList, EvidenceRecordView } from '../../shared/memory-evidence.ts';
import type { PolicyProfileView } from '../../shared/policy.ts';
import { anticipationApp, copyingProvider, evidenceBundle, seedMemory } from './support/anticipation-app.ts';
import { partiesForEachTest } from './support/edge-client.ts';

// Memory evidence against hostile bundles and policy versions (issue 34, ADR-0168): a bundle
// whose counts contradict themselves or the frozen corpora is refused at publication, and a new
// policy version needs its own evidence even when its body (and so its hash) equals an earlier
// version's.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8123';
const AISLE = 'I prefer aisle seats on flights.';

let providers = 0;
const providerId = (kind: string) => `test/evidence-hostile-${kind}-${++providers}`;

type Score = EvidenceBundle['repeats'][number]['holdout'];

/** `bundle` with every repeat's holdout score changed by `change`. */
function withHoldout(bundle: EvidenceBundle, change: (score: Score) => Score): EvidenceBundle {
  return { ...bundle, repeats: bundle.repeats.map((repeat) => ({ ...repeat, holdout: change(repeat.holdout) })) };
}

describe('memory evidence against hostile bundles', () => {
  it('refuses, as evidence_mismatch, counts that contradict themselves or the calls a run makes, and records nothing', async () => {
    const app = anticipationApp(copyingProvider(providerId('counts')));
    const policy = await app.request<PolicyProfileView>('GET', '/v1/policy-profiles/default', parties.operator.token);
    const good = await evidenceBundle('test/inconsistent', policy.body);
    const bad: Record<string, EvidenceBundle> = {
      'recalled more than needed': withHoldout(good, (s) => ({ ...s, directly_recalled: s.needed + 1_000 })),
      'represented more than seeded': withHoldout(good, (s) => ({ ...s, represented: s.seeded + 1 })),
      'represented more than recalled': withHoldout(good, (s) => ({ ...s, directly_recalled: 0 })),
      'unrepresented listed though all are represented': withHoldout(good, (s) => ({ ...s, unrepresented: ['case:mem'] })),
      'no provider call at all': withHoldout(good, (s) => ({ ...s, provider_calls: 0 })),
      'more calls than the budget allows': withHoldout(good, (s) => ({ ...s, provider_calls: s.cases * ANTICIPATION_CALL_BUDGET + 1 })),
    };
    for (const [what, bundle] of Object.entries(bad)) {
      const refused = await app.request<ErrorBody>('POST', '/v1/memory-evidence', parties.operator.token, bundle);
      expect([refused.status, refused.body.error?.code], what).toEqual([409, 'evidence_mismatch']);
    }
    const listed = await app.request<EvidenceRecordList>('GET', '/v1/memory-evidence', parties.operator.token);
    expect(listed.body.evidence).toEqual([]);
    // The consistent bundle itself is recorded.
    expect((await app.request<EvidenceRecordView>('POST', '/v1/memory-evidence', parties.operator.token, good)).status).toBe(201);
  });

  it('a new policy version whose body equals the one with evidence still runs without anticipation until evidence for the new version is published', async () => {
    const aisle = await seedMemory(parties.owner.id, AISLE);
    const provider = copyingProvider(providerId('same-body'));
    const app = anticipationApp(provider);
    const current = await app.request<PolicyProfileView>('GET', '/v1/policy-profiles/default', parties.operator.token);
    const published = await app.request('POST', '/v1/memory-evidence', parties.operator.token, await evidenceBundle(provider.id, current.body));
    expect(published.status).toBe(201);
    const run = () => app.request<RunView>('POST', '/v1/runs', parties.owner.token, { profile_id: 'memories', intent: 'Book flights', origins: [ORIGIN] });
    expect((await run()).body.anticipated).toEqual([{ memory_id: aisle, statement: AISLE }]);

    const next = await app.request<PolicyProfileView>('POST', '/v1/policy-profiles/default', parties.operator.token, {
      rules: current.body.rules,
      denies: current.body.denies,
    });
    expect(next.status).toBe(201);
    expect([next.body.version, next.body.hash]).toEqual([current.body.version + 1, current.body.hash]);
    const after = await run();
    expect(after.body.anticipated).toEqual([]);
    expect(after.body.anticipation).toMatchObject({ state: 'off', reason: 'no_evidence', policy_version: next.body.version });

    const fresh = await app.request('POST', '/v1/memory-evidence', parties.operator.token, await evidenceBundle(provider.id, next.body));
    expect(fresh.status).toBe(201);
    expect((await run()).body.anticipated).toEqual([{ memory_id: aisle, statement: AISLE }]);
  });
});
