import { describe, expect, it } from 'vitest';
import { embeddedAnticipator, lexicalPredictions, stem, terms } from '../../../edge/memories/lexical-anticipator.ts';
import { verifyPredictions } from '../../../edge/memories/verifier.ts';
import type { AnticipationRequest } from '../../../shared/memories.ts';

const travel: AnticipationRequest = {
  intent: 'Book me a flight to Lisbon for the conference in March',
  memories: [
    { id: 'mem_aisle', statement: 'I always want an aisle seat on flights.' },
    { id: 'mem_flyer', statement: 'My frequent flyer number is in the travel folder, not in the browser.' },
    { id: 'mem_peanut', statement: 'My daughter is allergic to peanuts.' },
    { id: 'mem_bins', statement: 'We put the recycling out on Tuesday nights.' },
    { id: 'mem_cat', statement: '  The cat’s vet is on Harbour Road —   ask before any visit.  ' },
  ],
};

describe('the embedded lexical anticipator', () => {
  it('brings the memories that share the intent’s words, each as one prediction copying its statement exactly', async () => {
    const answer = await embeddedAnticipator.anticipate(travel);
    expect(answer.costUsd).toBe(0);
    expect(answer.predictions).toEqual([
      { memory_id: 'mem_aisle', statement: 'I always want an aisle seat on flights.' },
      { memory_id: 'mem_flyer', statement: 'My frequent flyer number is in the travel folder, not in the browser.' },
    ]);
  });

  it('never cites an id outside the request, and every prediction passes the verifier', () => {
    const request: AnticipationRequest = {
      intent: 'Order dog food for Biscuit and book the vet for the cat',
      memories: [
        ...travel.memories,
        { id: 'mem_food', statement: 'Biscuit eats grain-free dry food only.' },
        { id: 'mem_dog', statement: 'Biscuit is a 25 kg labrador.' },
      ],
    };
    const predictions = lexicalPredictions(request);
    const ids = new Set(request.memories.map((m) => m.id));
    expect(predictions.length).toBeGreaterThan(0);
    for (const prediction of predictions) expect(ids.has(prediction.memory_id)).toBe(true);
    const byId = new Map(request.memories.map((m) => [m.id, m]));
    for (const prediction of predictions) expect(prediction.statement).toBe(byId.get(prediction.memory_id)?.statement);
    const verified = verifyPredictions(
      predictions,
      (id) => {
        const memory = byId.get(id);
        return memory && { owner: 'self', state: 'active', statement: memory.statement };
      },
      request.memories.map((m) => m.statement),
    );
    expect(verified.refused).toEqual([]);
    expect(verified.anticipated.map((a) => a.memory_id).sort()).toEqual(['mem_cat', 'mem_dog', 'mem_food']);
  });

  it('brings a memory that names the intent’s task in another form (returns for return)', () => {
    const predictions = lexicalPredictions({
      intent: 'Return the laptop I bought last week, it is faulty',
      memories: [
        { id: 'mem_returns', statement: 'Returns go back by drop-off at the shop, never by courier collection.' },
        { id: 'mem_bins', statement: 'We put the recycling out on Tuesday nights.' },
      ],
    });
    expect(predictions.map((p) => p.memory_id)).toEqual(['mem_returns']);
  });

  it('reads a plural of an -ing noun and an agent noun as the word they come from (weddings, walker)', () => {
    const predictions = lexicalPredictions({
      intent: 'Find a dog walker for the wedding weekend',
      memories: [
        { id: 'mem_walks', statement: 'Rolo needs solo walks, not group walks.' },
        { id: 'mem_weddings', statement: 'I bring Alex as my plus one to weddings.' },
        { id: 'mem_bins', statement: 'We put the recycling out on Tuesday nights.' },
      ],
    });
    expect(predictions.map((p) => p.memory_id).sort()).toEqual(['mem_walks', 'mem_weddings']);
  });

  it('brings a memory that says the intent’s task verb itself, as an instruction', () => {
    const predictions = lexicalPredictions({
      intent: 'Order a takeaway for tonight',
      memories: [
        { id: 'mem_shellfish', statement: 'I am allergic to shellfish; never order prawns.' },
        { id: 'mem_bins', statement: 'We put the recycling out on Tuesday nights.' },
      ],
    });
    expect(predictions.map((p) => p.memory_id)).toEqual(['mem_shellfish']);
  });

  it('answers nothing when the owner has no memory or none is related, and the same request always gets the same answer', async () => {
    expect(lexicalPredictions({ intent: 'Book a flight', memories: [] })).toEqual([]);
    expect(lexicalPredictions({ intent: 'Pay the water bill', memories: travel.memories })).toEqual([]);
    expect(await embeddedAnticipator.anticipate(travel)).toEqual(await embeddedAnticipator.anticipate(travel));
  });

  it('stems plurals and -ing forms but keeps past forms apart', () => {
    expect(stem('flights')).toBe('flight');
    expect(stem('taxis')).toBe('taxi');
    expect(stem('cars')).toBe('car');
    expect(stem('groceries')).toBe('grocery');
    expect(stem('renting')).toBe('rent');
    expect(stem('booked')).toBe('booked');
    expect(stem('glasses')).toBe('glasses');
  });
});

describe('the embedded lexical anticipator’s word tables', () => {
  it('reads a word named like an Object.prototype member (constructor) as a plain word', () => {
    expect(stem('constructor')).toBe('constructor');
    expect([...terms('The constructor of the shed is Ali').keys()]).toEqual(['constructor', 'shed', 'ali']);
  });
});
