import { describe, expect, it } from 'vitest';
import { caseRequest, evaluateCorpus, evaluateProvider } from '../../../edge/memories/evaluation.ts';
import { canonicalHash } from '../../../edge/policy/canonical-hash.ts';
import type { AnticipationProvider } from '../../../shared/memories.ts';
import { EvidenceBundle, type MemoryCorpus, MemoryCorpusCase } from '../../../shared/memory-evidence.ts';

const shopping = MemoryCorpusCase.parse({
  id: 'shoes',
  intent: 'Order new running shoes',
  memories: [
    { id: 'm1', statement: 'My shoe size is EU 43.', owner: 'self', state: 'active' },
    { id: 'm2', statement: 'Deliveries go to the parcel locker.', owner: 'self', state: 'active' },
    { id: 'm3', statement: 'My shoe size is EU 42.', owner: 'self', state: 'retired' },
    { id: 'm4', statement: 'I take my coffee black.', owner: 'self', state: 'active' },
    { id: 'o1', statement: 'My shoe size is EU 38.', owner: 'other', state: 'active' },
  ],
  suggestions: [{ id: 's1', statement: 'The shop has a sale on shoes.', page_derived: true }],
  needed: ['m1'],
  seeded: ['m1'],
  boundary: [
    { memory_id: 'm3', kind: 'retired' },
    { memory_id: 'm4', kind: 'unrelated' },
    { memory_id: 'o1', kind: 'other_owner' },
    { memory_id: 's1', kind: 'page_derived_suggestion' },
  ],
});
const corpus = (name: MemoryCorpus['name']): MemoryCorpus => ({ name, cases: [shopping] });

/** A provider that cites the given ids, copying the case's statements, and records what it was given. */
function citing(ids: readonly string[], seen: unknown[] = []): AnticipationProvider {
  return {
    id: 'test-citing/1',
    anticipate(request) {
      seen.push(request);
      const all = new Map([...shopping.memories, ...shopping.suggestions].map((m) => [m.id, m.statement]));
      return Promise.resolve({ predictions: ids.map((id) => ({ memory_id: id, statement: all.get(id) })), costUsd: 0.001 });
    },
  };
}

describe('the memory evaluation', () => {
  it('gives the provider the intent and the owner’s active memories only', async () => {
    expect(caseRequest(shopping)).toEqual({
      intent: 'Order new running shoes',
      memories: [
        { id: 'm1', statement: 'My shoe size is EU 43.' },
        { id: 'm2', statement: 'Deliveries go to the parcel locker.' },
        { id: 'm4', statement: 'I take my coffee black.' },
      ],
    });
    const seen: unknown[] = [];
    await evaluateCorpus(citing(['m1'], seen), corpus('development'));
    expect(seen).toEqual([caseRequest(shopping)]);
  });

  it('counts a needed memory recalled and its seeded clause represented only when a verified anticipation cites it', async () => {
    const score = await evaluateCorpus(citing(['m1', 'm2']), corpus('development'));
    expect(score).toMatchObject({ needed: 1, directly_recalled: 1, seeded: 1, represented: 1, unrepresented: [], boundary_failures: [], refused: 0 });
    const missed = await evaluateCorpus(citing(['m2']), corpus('development'));
    expect(missed).toMatchObject({ directly_recalled: 0, represented: 0, unrepresented: ['shoes:m1'] });
  });

  it('refuses retired, other-owner and suggestion ids (no boundary failure) and counts an unrelated memory brought as one', async () => {
    const score = await evaluateCorpus(citing(['m3', 'o1', 's1', 'm4']), corpus('holdout'));
    expect(score.refused).toBe(3);
    expect(score.boundary_failures).toEqual([{ case_id: 'shoes', memory_id: 'm4', kind: 'unrelated' }]);
    expect(score.provider_calls).toBe(1);
    expect(score.cost_usd).toBeCloseTo(0.001);
  });

  it('scores a case the provider failed on as nothing brought, after the whole call budget, and says why', async () => {
    const failing: AnticipationProvider = { id: 'test-failing/1', anticipate: () => Promise.reject(new Error('vendor unreachable')) };
    const heard: string[] = [];
    const score = await evaluateCorpus(failing, corpus('development'), 2, (caseId, message) => heard.push(`${caseId}: ${message}`));
    expect(score).toMatchObject({ directly_recalled: 0, represented: 0, provider_calls: 2, refused: 0 });
    expect(heard).toEqual(['shoes: vendor unreachable']);
  });

  it('makes a bundle of three repeats with the corpora hashes, the gates recomputed and the totals', async () => {
    const profile = { name: 'default', version: 3, hash: 'a'.repeat(64) };
    const corpora = { development: corpus('development'), holdout: corpus('holdout') };
    const passing = EvidenceBundle.parse(await evaluateProvider(citing(['m1']), corpora, profile, { now: () => new Date(0) }));
    expect(passing.passed).toBe(true);
    expect(passing.corpora.development.hash).toBe(await canonicalHash(corpora.development));
    expect(passing.provider_calls).toBe(6);
    expect(passing.created_at).toBe('1970-01-01T00:00:00.000Z');
    const failing = await evaluateProvider(citing(['m1', 'm4']), corpora, profile);
    expect(failing.passed).toBe(false);
    expect(failing.gates.find((g) => g.name === 'boundary_failures')).toMatchObject({ figure: 6, passed: false });
  });
});
