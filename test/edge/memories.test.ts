import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { MAX_ACTIVE_MEMORIES, type MemoryList, type MemoryView } from '../../shared/memories.ts';
import { call, callError, errorBody, partiesForEachTest } from './support/edge-client.ts';

// The owner's memories over the HTTP API on the Workers app and the real D1 (issue 34): the owner
// writes, reads, edits and retires them; agents and operators cannot; owners never see each
// other's; the active-memory cap holds where the row is written, also under races.

const parties = partiesForEachTest();

function remember(statement: string, token = parties.owner.token) {
  return call<MemoryView>('POST', '/v1/memories', { token, body: { statement } });
}

async function memoryRows(ownerId: string) {
  const { results } = await env.DB.prepare('SELECT id, statement, state, revision, source FROM memories WHERE owner_id = ? ORDER BY created_at, id')
    .bind(ownerId)
    .all<Record<string, unknown>>();
  return results;
}

/** Seeds `n` active memories for `ownerId` straight into D1 (the cap's tests start near it). */
async function seedActive(ownerId: string, n: number): Promise<void> {
  const insert = env.DB.prepare(
    "INSERT INTO memories (id, owner_id, statement, source, state, revision, created_at, updated_at) VALUES (?, ?, ?, 'owner', 'active', 1, ?, ?)",
  );
  await env.DB.batch(Array.from({ length: n }, (_, index) => insert.bind(`mem_seed_${ownerId}_${index}`, ownerId, `seeded fact ${index}`, index, index)));
}

describe('memories', () => {
  it('are written by the owner as active memories of their own words, read back, listed newest first and filtered by state', async () => {
    const first = await remember('  I prefer aisle seats on flights over two hours.  ');
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      id: expect.stringMatching(/^mem_[a-z2-7]{20}$/),
      statement: 'I prefer aisle seats on flights over two hours.',
      source: 'owner',
      state: 'active',
      revision: 1,
      suggestion_id: null,
      created_at: expect.any(String),
      updated_at: first.body.created_at,
      retired_at: null,
    });
    const second = await remember('My frequent-flyer number is in the travel folder.');
    const read = await call<MemoryView>('GET', `/v1/memories/${first.body.id}`, { token: parties.owner.token });
    expect(read).toEqual({ status: 200, body: first.body });
    const retired = await call<MemoryView>('PATCH', `/v1/memories/${second.body.id}`, { token: parties.owner.token, body: { state: 'retired' } });
    const all = await call<MemoryList>('GET', '/v1/memories', { token: parties.owner.token });
    expect(all.body.memories.map((memory) => memory.id).toSorted()).toEqual([first.body.id, second.body.id].toSorted());
    const createdAt = all.body.memories.map((memory) => memory.created_at);
    expect(createdAt).toEqual(createdAt.toSorted().toReversed());
    const active = await call<MemoryList>('GET', '/v1/memories?state=active', { token: parties.owner.token });
    expect(active.body.memories).toEqual([first.body]);
    const retiredOnly = await call<MemoryList>('GET', '/v1/memories?state=retired', { token: parties.owner.token });
    expect(retiredOnly.body.memories).toEqual([retired.body]);
  });

  it('are edited to a new statement with the revision counted up, conditional on the revision named', async () => {
    const made = await remember('I take the 7:40 train.');
    const edited = await call<MemoryView>('PATCH', `/v1/memories/${made.body.id}`, {
      token: parties.owner.token,
      body: { statement: 'I take the 8:10 train.', revision: 1 },
    });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ id: made.body.id, statement: 'I take the 8:10 train.', revision: 2, state: 'active', source: 'owner' });
    const stale = await callError('PATCH', `/v1/memories/${made.body.id}`, { token: parties.owner.token, body: { statement: 'I cycle.', revision: 1 } });
    expect(stale).toEqual({
      status: 409,
      body: errorBody('stale_revision', `memory ${made.body.id} is at revision 2, not 1; read it and try again`),
    });
    const unconditional = await call<MemoryView>('PATCH', `/v1/memories/${made.body.id}`, { token: parties.owner.token, body: { statement: 'I cycle.' } });
    expect(unconditional.body).toMatchObject({ statement: 'I cycle.', revision: 3 });
    expect(await memoryRows(parties.owner.id)).toEqual([{ id: made.body.id, statement: 'I cycle.', state: 'active', revision: 3, source: 'owner' }]);
  });

  it('are retired for good: a retired memory is neither edited nor retired again', async () => {
    const made = await remember('I am vegetarian.');
    const retired = await call<MemoryView>('PATCH', `/v1/memories/${made.body.id}`, { token: parties.owner.token, body: { state: 'retired', revision: 1 } });
    expect(retired.status).toBe(200);
    expect(retired.body).toMatchObject({ state: 'retired', revision: 1, retired_at: expect.any(String) });
    const message = `memory ${made.body.id} is retired, which is final; write a new memory instead`;
    for (const body of [{ statement: 'I am vegan.' }, { state: 'retired' }]) {
      const refused = await callError('PATCH', `/v1/memories/${made.body.id}`, { token: parties.owner.token, body });
      expect(refused).toEqual({ status: 409, body: errorBody('already_decided', message) });
    }
    expect(await memoryRows(parties.owner.id)).toEqual([{ id: made.body.id, statement: 'I am vegetarian.', state: 'retired', revision: 1, source: 'owner' }]);
  });

  it("are the owner's only: agents and operators are forbidden, and another owner's memory is not found", async () => {
    const made = await remember('My dentist is Dr. Ruiz.');
    const refusals = [
      await callError('POST', '/v1/memories', { token: parties.agent.token, body: { statement: 'I like jazz.' } }),
      await callError('GET', '/v1/memories', { token: parties.agent.token }),
      await callError('GET', `/v1/memories/${made.body.id}`, { token: parties.agent.token }),
      await callError('PATCH', `/v1/memories/${made.body.id}`, { token: parties.agent.token, body: { state: 'retired' } }),
      await callError('POST', '/v1/memories', { token: parties.operator.token, body: { statement: 'I like jazz.' } }),
      await callError('GET', `/v1/memories/${made.body.id}`, { token: parties.strangerOwner.token }),
      await callError('PATCH', `/v1/memories/${made.body.id}`, { token: parties.strangerOwner.token, body: { state: 'retired' } }),
      await callError('GET', `/v1/memories/${made.body.id}`, { token: parties.strangerAgent.token }),
    ];
    expect(refusals.map((answer) => [answer.status, answer.body.error.code])).toEqual([
      [403, 'forbidden'],
      [403, 'forbidden'],
      [403, 'forbidden'],
      [403, 'forbidden'],
      [403, 'forbidden'],
      [404, 'not_found'],
      [404, 'not_found'],
      [403, 'forbidden'],
    ]);
    expect(refusals[0]?.body).toEqual(errorBody('forbidden', 'this endpoint is for owner principals, not agent'));
    expect(refusals[5]?.body).toEqual(errorBody('not_found', `no memory ${made.body.id}`));
    const strangers = await call<MemoryList>('GET', '/v1/memories', { token: parties.strangerOwner.token });
    expect(strangers.body).toEqual({ memories: [] });
    expect(await memoryRows(parties.owner.id)).toEqual([
      { id: made.body.id, statement: 'My dentist is Dr. Ruiz.', state: 'active', revision: 1, source: 'owner' },
    ]);
  });

  it(`hold at most ${MAX_ACTIVE_MEMORIES} active per owner: past it quota_exceeded with nothing written; retiring one makes room`, async () => {
    await seedActive(parties.owner.id, MAX_ACTIVE_MEMORIES);
    const refused = await callError('POST', '/v1/memories', { token: parties.owner.token, body: { statement: 'one too many' } });
    expect(refused).toEqual({
      status: 429,
      body: errorBody('quota_exceeded', `an owner keeps at most ${MAX_ACTIVE_MEMORIES} active memories; retire one first`),
    });
    expect(await memoryRows(parties.owner.id)).toHaveLength(MAX_ACTIVE_MEMORIES);
    // Another owner's memories are not counted against this one.
    expect((await remember('a stranger has room', parties.strangerOwner.token)).status).toBe(201);
    await call('PATCH', `/v1/memories/mem_seed_${parties.owner.id}_0`, { token: parties.owner.token, body: { state: 'retired' } });
    expect((await remember('now there is room')).status).toBe(201);
  });

  it('hold the cap under racing creates: exactly the places left are taken', async () => {
    await seedActive(parties.owner.id, MAX_ACTIVE_MEMORIES - 3);
    const answers = await Promise.all(Array.from({ length: 8 }, (_, index) => remember(`racing fact ${index}`)));
    expect(answers.map((answer) => answer.status).toSorted()).toEqual([201, 201, 201, 429, 429, 429, 429, 429]);
    const active = await env.DB.prepare("SELECT count(*) AS n FROM memories WHERE owner_id = ? AND state = 'active'")
      .bind(parties.owner.id)
      .first<{ n: number }>();
    expect(active?.n).toBe(MAX_ACTIVE_MEMORIES);
  });

  it('answer racing retire and edit with one winner and a 409 for the other, unless one read after the other had written; never an edit of a retired memory', async () => {
    for (let round = 0; round < 5; round++) {
      const made = await remember(`race round ${round}`);
      const [retire, edit] = await Promise.all([
        callError('PATCH', `/v1/memories/${made.body.id}`, { token: parties.owner.token, body: { state: 'retired' } }),
        callError('PATCH', `/v1/memories/${made.body.id}`, { token: parties.owner.token, body: { statement: `edited in round ${round}` } }),
      ]);
      const stored = await env.DB.prepare('SELECT state, revision, statement FROM memories WHERE id = ?').bind(made.body.id).first();
      if (retire.status === 200 && edit.status === 200) {
        // Not a race: the retirement read the edited memory (revision 2) and retired it.
        expect(stored).toEqual({ state: 'retired', revision: 2, statement: `edited in round ${round}` });
        continue;
      }
      const loser = retire.status === 200 ? edit : retire;
      expect([retire.status, edit.status].filter((status) => status === 200)).toHaveLength(1);
      expect(loser.status).toBe(409);
      expect(['already_decided', 'stale_revision']).toContain(loser.body.error.code);
      expect(stored).toEqual(
        retire.status === 200
          ? { state: 'retired', revision: 1, statement: `race round ${round}` }
          : { state: 'active', revision: 2, statement: `edited in round ${round}` },
      );
    }
  });
});
