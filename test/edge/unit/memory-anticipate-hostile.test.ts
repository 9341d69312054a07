import { describe, expect, it } from 'vitest';
import { anticipate } from '../../../edge/memories/anticipate.ts';
import { evaluateCorpus } from '../../../edge/memories/evaluation.ts';
import { costOfUsage } from '../../../edge/memories/model-anticipator.ts';
import { type CitedMemory, verifyPredictions } from '../../../edge/memories/verifier.ts';
import { type AnticipationProvider, MAX_PREDICTIONS } from '../../../shared/memories.ts';
import { type MemoryCorpus, MemoryCorpusCase } from '../../../shared/memory-evidence.ts';

// anticipate() against hostile providers (issue 34): the evaluation and the run start share it,
// so what a run would count as a failed call (an answer past the response schema's 32
// predictions, an answer that is not a list, a cost that is not a finite non-negative number, a
// call that never answers) must be a failed call in the evidence too, and every call is bounded
// in time on both paths.

const AISLE = 'I prefer aisle seats on flights.';
const stored: Record<string, CitedMemory> = { mem_aisle: { owner: 'self', state: 'active', statement: AISLE } };
const cited = (id: string) => stored[id];
const request = { intent: 'Book a flight', memories: [{ id: 'mem_aisle', statement: AISLE }] };

function answering(answer: unknown): AnticipationProvider {
  return { id: 'test/hostile', anticipate: async () => answer as never };
}

const trip = MemoryCorpusCase.parse({
  id: 'trip',
  intent: 'Book a flight',
  memories: [{ id: 'mem_aisle', statement: AISLE, owner: 'self', state: 'active' }],
  suggestions: [],
  needed: ['mem_aisle'],
  seeded: ['mem_aisle'],
  boundary: [],
});
const corpus: MemoryCorpus = { name: 'development', cases: [trip] };

describe('anticipate against hostile providers', () => {
  it('counts an answer of more than 32 predictions as a failed call, as the run start does, so the evidence cannot score it', async () => {
    const flood = Array.from({ length: MAX_PREDICTIONS + 1 }, () => ({ memory_id: 'mem_aisle', statement: AISLE }));
    const outcome = await anticipate(answering({ predictions: flood, costUsd: 0 }), request, cited, 2);
    expect(outcome).toMatchObject({ anticipated: [], refused: [], providerCalls: 2 });
    expect(outcome.failure).toMatch(/at most 32/);
    const score = await evaluateCorpus(answering({ predictions: flood, costUsd: 0 }), corpus);
    expect(score).toMatchObject({ directly_recalled: 0, represented: 0, refused: 0 });
  });

  it('counts predictions that are not a list, and a cost that is not a finite non-negative number, as failed calls', async () => {
    const copy = [{ memory_id: 'mem_aisle', statement: AISLE }];
    for (const answer of [
      { predictions: 'x'.repeat(100_000), costUsd: 0 },
      { predictions: { 0: copy[0], length: 1 }, costUsd: 0 },
      { predictions: copy, costUsd: Number.NaN },
      { predictions: copy, costUsd: -1 },
      { predictions: copy, costUsd: Number.POSITIVE_INFINITY },
      { predictions: copy },
      null,
    ]) {
      const outcome = await anticipate(answering(answer), request, cited, 1);
      expect(outcome, JSON.stringify(answer)?.slice(0, 80)).toMatchObject({ anticipated: [], refused: [], providerCalls: 1 });
      expect(outcome.failure).toBeDefined();
      expect(Number.isFinite(outcome.costUsd)).toBe(true);
    }
  });

  it('cuts off a call that never answers at the timeout, within the budget, on the evaluation path too', async () => {
    const silent: AnticipationProvider = { id: 'test/silent', anticipate: () => new Promise(() => {}) };
    const started = Date.now();
    const outcome = await anticipate(silent, request, cited, 2, { timeoutMs: 50 });
    expect(outcome).toMatchObject({ anticipated: [], providerCalls: 2 });
    expect(outcome.failure).toMatch(/did not answer within 50 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
    // The evaluation's own default is bounded too: a clock whose waits end at once.
    const score = await evaluateCorpus(silent, corpus, 2, undefined, { sleep: () => Promise.resolve() });
    expect(score).toMatchObject({ directly_recalled: 0, provider_calls: 2 });
  });

  it('prices a model named like an Object prototype key as unlisted (cost 0), never as NaN', () => {
    for (const model of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expect(costOfUsage(model, { input_tokens: 1_000, output_tokens: 1_000 }), model).toBe(0);
    }
  });

  it('refuses predictions JSON cannot write (a BigInt, a cycle, a null-prototype object) by the schema, and still verifies the rest of the answer', () => {
    const cycle: Record<string, unknown> = { memory_id: 'mem_aisle' };
    cycle.self = cycle;
    const verification = verifyPredictions([10n, cycle, Object.create(null), { memory_id: 'mem_aisle', statement: AISLE }], cited, [AISLE]);
    expect(verification.anticipated).toEqual([{ memory_id: 'mem_aisle', statement: AISLE }]);
    expect(verification.refused.map((r) => [r.memory_id, r.reason])).toEqual([
      [null, 'schema'],
      ['mem_aisle', 'schema'],
      [null, 'schema'],
    ]);
  });
});
