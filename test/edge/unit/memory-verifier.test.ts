import { describe, expect, it } from 'vitest';
import { anticipate } from '../../../edge/memories/anticipate.ts';
import { type CitedMemory, normaliseStatement, verifyPredictions } from '../../../edge/memories/verifier.ts';
import { type AnticipationProvider, AnticipationResponse } from '../../../shared/memories.ts';

// The verifier (ADR-0168, issue 34): a prediction cites exactly one memory (the response schema)
// and is accepted only when its statement is what that memory asserts. The regression the ADR
// names: two ids in one prediction are refused by the schema, one id with a statement joining
// two memories is refused as a compound, a copied statement passes.

const AISLE = 'I prefer aisle seats on flights.';
const VEGETARIAN = 'I am vegetarian.';
const PASSPORT = 'My passport number is in the travel folder, not in the browser.';

const stored: Record<string, CitedMemory> = {
  mem_aisle: { owner: 'self', state: 'active', statement: AISLE },
  mem_veg: { owner: 'self', state: 'active', statement: VEGETARIAN },
  mem_passport: { owner: 'self', state: 'active', statement: PASSPORT },
  mem_old: { owner: 'self', state: 'retired', statement: 'I live in Porto.' },
  mem_theirs: { owner: 'other', state: 'active', statement: 'I prefer window seats.' },
};
const cited = (id: string) => stored[id];
const ownerStatements = [AISLE, VEGETARIAN, PASSPORT];

describe('the anticipation verifier', () => {
  it('gives one decision per prediction in the answer’s order, refused and verified interleaved as the provider sent them', () => {
    const verification = verifyPredictions(
      [
        { memory_id: 'mem_old', statement: 'I live in Porto.' },
        { memory_id: 'mem_aisle', statement: AISLE },
        { memory_id: 'mem_veg', statement: 'I am vegan.' },
        { memory_id: 'mem_passport', statement: PASSPORT.toUpperCase() },
      ],
      cited,
      ownerStatements,
    );
    expect(verification.decisions.map((d) => [d.verdict, d.memory_id, d.verdict === 'refused' ? d.reason : d.statement])).toEqual([
      ['refused', 'mem_old', 'retired_memory'],
      ['verified', 'mem_aisle', AISLE],
      ['refused', 'mem_veg', 'not_asserted'],
      ['verified', 'mem_passport', PASSPORT],
    ]);
  });

  it('refuses a compound prediction citing two memory ids by the response schema, both as an answer and one by one', () => {
    const compound = { memory_id: ['mem_aisle', 'mem_veg'], statement: `${AISLE} ${VEGETARIAN}` };
    expect(AnticipationResponse.safeParse({ predictions: [compound] }).success).toBe(false);
    const twoIdFields = { memory_id: 'mem_aisle', memory_ids: ['mem_aisle', 'mem_veg'], statement: AISLE };
    const verification = verifyPredictions([compound, twoIdFields], cited, ownerStatements);
    expect(verification.anticipated).toEqual([]);
    expect(verification.refused.map((r) => [r.memory_id, r.reason])).toEqual([
      [null, 'schema'],
      ['mem_aisle', 'schema'],
    ]);
  });

  it('refuses one id with a statement joining two memories as a compound, and passes the copied statement', () => {
    const verification = verifyPredictions(
      [
        { memory_id: 'mem_aisle', statement: `${AISLE} ${VEGETARIAN}` },
        { memory_id: 'mem_veg', statement: `${VEGETARIAN} Also: ${PASSPORT}` },
        { memory_id: 'mem_passport', statement: PASSPORT },
      ],
      cited,
      ownerStatements,
    );
    expect(verification.refused.map((r) => [r.memory_id, r.reason])).toEqual([
      ['mem_aisle', 'compound'],
      ['mem_veg', 'compound'],
    ]);
    expect(verification.anticipated).toEqual([{ memory_id: 'mem_passport', statement: PASSPORT }]);
  });

  it("passes a copy that differs only in case, spacing, typographic quotes and final stop, and shows the owner's own words", () => {
    const copy = '  i PREFER   aisle seats on flights  ';
    const verification = verifyPredictions([{ memory_id: 'mem_aisle', statement: copy }], cited, ownerStatements);
    expect(verification).toMatchObject({ anticipated: [{ memory_id: 'mem_aisle', statement: AISLE }], refused: [] });
    expect(normaliseStatement('It’s “here”.')).toBe(normaliseStatement('it\'s "here"'));
  });

  it.each([
    ['a paraphrase', 'I like sitting by the aisle when I fly.'],
    ['an addition', `${AISLE} And I always want extra legroom.`],
    ['a part of the statement', 'I prefer aisle seats'],
    ['another fact under its id', 'I prefer window seats.'],
  ])('refuses %s as not asserted', (_what, statement) => {
    const verification = verifyPredictions([{ memory_id: 'mem_aisle', statement }], cited, ownerStatements);
    expect(verification.anticipated).toEqual([]);
    expect(verification.refused).toEqual([{ memory_id: 'mem_aisle', statement, reason: 'not_asserted' }]);
  });

  it.each([
    ['an unknown id', 'mem_nobody', 'I prefer aisle seats on flights.', 'unknown_memory'],
    ['a retired memory', 'mem_old', 'I live in Porto.', 'retired_memory'],
    ["another owner's memory", 'mem_theirs', 'I prefer window seats.', 'other_owner'],
  ] as const)('refuses %s even when the statement is copied', (_what, memoryId, statement, reason) => {
    const verification = verifyPredictions([{ memory_id: memoryId, statement }], cited, ownerStatements);
    expect(verification).toMatchObject({ anticipated: [], refused: [{ memory_id: memoryId, statement, reason }] });
  });

  it('brings a memory once: a second prediction citing it is a duplicate', () => {
    const verification = verifyPredictions(
      [
        { memory_id: 'mem_veg', statement: VEGETARIAN },
        { memory_id: 'mem_veg', statement: 'I am vegetarian' },
      ],
      cited,
      ownerStatements,
    );
    expect(verification.anticipated).toEqual([{ memory_id: 'mem_veg', statement: VEGETARIAN }]);
    expect(verification.refused).toEqual([{ memory_id: 'mem_veg', statement: 'I am vegetarian', reason: 'duplicate' }]);
  });

  it('anticipate asks the provider again within the budget after a failure, and no more than the budget allows', async () => {
    let calls = 0;
    const flaky: AnticipationProvider = {
      id: 'test/flaky',
      anticipate: async (request) => {
        calls += 1;
        if (calls === 1) throw new Error('overloaded');
        return { predictions: request.memories.map((m) => ({ memory_id: m.id, statement: m.statement })), costUsd: 0.01 };
      },
    };
    const request = { intent: 'Book a flight', memories: [{ id: 'mem_aisle', statement: AISLE }] };
    const outcome = await anticipate(flaky, request, cited, 2);
    expect(outcome).toMatchObject({ providerCalls: 2, costUsd: 0.01, anticipated: [{ memory_id: 'mem_aisle', statement: AISLE }], refused: [] });
    expect(outcome.failure).toBeUndefined();

    calls = 0;
    const failing: AnticipationProvider = { id: 'test/down', anticipate: async () => Promise.reject(new Error(`down ${++calls}`)) };
    expect(await anticipate(failing, request, cited, 2)).toMatchObject({ providerCalls: 2, anticipated: [], failure: 'down 2' });
    expect(calls).toBe(2);
  });
});
