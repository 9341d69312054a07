import { env, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { ActivityList, RunView } from '../../shared/api.ts';
import { MAX_ACTIVE_MEMORIES, MAX_PENDING_SUGGESTIONS, type MemoryList, type SuggestionList, type SuggestionView } from '../../shared/memories.ts';
import { call, callError, errorBody, partiesForEachTest } from './support/edge-client.ts';
import { runFixture } from './support/run-fixture.ts';

// Memories agents propose in their run reports (issue 34) on the Workers app and the real D1:
// they become pending suggestions in the report's own batch, never memories by themselves; the
// owner accepts (optionally in their own words) or rejects, once; the bounds hold under races.

const parties = partiesForEachTest();
const { newRun } = runFixture(parties);

/** Ends a fresh run the agent holds with a report proposing `memories`. */
async function reportWith(memories: unknown[], token = parties.agent.token) {
  const run = await newRun(token);
  const answer = await call<RunView>('POST', `/v1/runs/${run.id}/report`, { token, body: { status: 'completed', summary: 'done', memories } });
  return { run, answer };
}

async function suggestionRows(ownerId: string) {
  const { results } = await env.DB.prepare(
    'SELECT run_id, proposed_by, statement, page_derived, state, memory_id FROM memory_suggestions WHERE owner_id = ? ORDER BY created_at, rowid',
  )
    .bind(ownerId)
    .all<Record<string, unknown>>();
  return results;
}

async function pendingOf(token = parties.owner.token): Promise<SuggestionView[]> {
  return (await call<SuggestionList>('GET', '/v1/memory-suggestions?state=pending', { token })).body.suggestions;
}

function decide(id: string, body: unknown, token = parties.owner.token) {
  return call<SuggestionView>('POST', `/v1/memory-suggestions/${id}/decision`, { token, body });
}

/** Seeds `n` pending suggestions for `ownerId` straight into D1. */
async function seedPending(ownerId: string, n: number): Promise<void> {
  const insert = env.DB.prepare(
    "INSERT INTO memory_suggestions (id, owner_id, run_id, proposed_by, statement, page_derived, state, created_at) VALUES (?, ?, 'run_seed', 'prn_seed', ?, 0, 'pending', ?)",
  );
  await env.DB.batch(Array.from({ length: n }, (_, index) => insert.bind(`sug_seed_${ownerId}_${index}`, ownerId, `seeded suggestion ${index}`, index)));
}

describe('memory suggestions', () => {
  it('are recorded from a run report as pending suggestions, by the proposing agent, page-derived as said, and no memory is made', async () => {
    const { run, answer } = await reportWith([
      { statement: 'The owner prefers morning deliveries.', page_derived: false },
      { statement: 'The shop closes at 6 pm.', page_derived: true },
    ]);
    expect(answer.status).toBe(200);
    expect(answer.body.state).toBe('completed');
    expect(await suggestionRows(parties.owner.id)).toEqual([
      { run_id: run.id, proposed_by: parties.agent.id, statement: 'The owner prefers morning deliveries.', page_derived: 0, state: 'pending', memory_id: null },
      { run_id: run.id, proposed_by: parties.agent.id, statement: 'The shop closes at 6 pm.', page_derived: 1, state: 'pending', memory_id: null },
    ]);
    const listed = await pendingOf();
    expect(listed.map((suggestion) => [suggestion.statement, suggestion.page_derived])).toEqual(
      expect.arrayContaining([
        ['The owner prefers morning deliveries.', false],
        ['The shop closes at 6 pm.', true],
      ]),
    );
    expect(listed[0]).toEqual({
      id: expect.stringMatching(/^sug_[a-z2-7]{20}$/),
      run_id: run.id,
      statement: expect.any(String),
      page_derived: expect.any(Boolean),
      proposed_by: parties.agent.id,
      state: 'pending',
      memory_id: null,
      created_at: expect.any(String),
      decided_at: null,
    });
    expect((await call<MemoryList>('GET', '/v1/memories', { token: parties.owner.token })).body).toEqual({ memories: [] });
    // The stranger owner sees none of them.
    expect((await call<SuggestionList>('GET', '/v1/memory-suggestions', { token: parties.strangerOwner.token })).body).toEqual({ suggestions: [] });
  });

  it('are accepted as active memories with source suggestion, in the owner\u2019s own words when given, or rejected; a decision is final', async () => {
    await reportWith([
      { statement: 'The owner likes window seats.', page_derived: false },
      { statement: 'The owner reads the news at 7.', page_derived: false },
      { statement: 'Ads say buy now.', page_derived: false },
    ]);
    const byStatement = new Map((await pendingOf()).map((suggestion) => [suggestion.statement, suggestion]));
    const asIs = byStatement.get('The owner likes window seats.')!;
    const reworded = byStatement.get('The owner reads the news at 7.')!;
    const rejected = byStatement.get('Ads say buy now.')!;

    const accepted = await decide(asIs.id, { decision: 'accept' });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ id: asIs.id, state: 'accepted', memory_id: expect.stringMatching(/^mem_/), decided_at: expect.any(String) });
    const ownWords = await decide(reworded.id, { decision: 'accept', statement: 'I read the news at 7:30.' });
    const rejection = await decide(rejected.id, { decision: 'reject' });
    expect(rejection.body).toMatchObject({ state: 'rejected', memory_id: null });

    const memories = (await call<MemoryList>('GET', '/v1/memories?state=active', { token: parties.owner.token })).body.memories;
    expect(memories.map((memory) => [memory.statement, memory.source, memory.suggestion_id, memory.id]).toSorted()).toEqual(
      [
        ['I read the news at 7:30.', 'suggestion', reworded.id, ownWords.body.memory_id],
        ['The owner likes window seats.', 'suggestion', asIs.id, accepted.body.memory_id],
      ].toSorted(),
    );
    for (const [id, decision] of [
      [asIs.id, 'reject'],
      [rejected.id, 'accept'],
    ] as const) {
      const again = await callError('POST', `/v1/memory-suggestions/${id}/decision`, { token: parties.owner.token, body: { decision } });
      expect([again.status, again.body.error.code]).toEqual([409, 'already_decided']);
    }
    expect((await pendingOf()).length).toBe(0);
    expect((await call<SuggestionList>('GET', '/v1/memory-suggestions?state=accepted', { token: parties.owner.token })).body.suggestions).toHaveLength(2);
  });

  it(`are kept only up to ${MAX_PENDING_SUGGESTIONS} pending per owner: a report keeps those that fit, still ends the run, and MCP says how many`, async () => {
    await seedPending(parties.owner.id, MAX_PENDING_SUGGESTIONS - 2);
    const { run: reported, answer } = await reportWith([
      { statement: 'first fits', page_derived: false },
      { statement: 'second fits', page_derived: true },
      { statement: 'third does not', page_derived: false },
    ]);
    expect([answer.status, answer.body.state]).toEqual([200, 'completed']);
    const fresh = (await suggestionRows(parties.owner.id)).filter((row) => row.run_id !== 'run_seed');
    expect(fresh.map((row) => row.statement)).toEqual(['first fits', 'second fits']);
    // The run's activity lists the ones kept, for the agent that sent three.
    const activity = await call<ActivityList>('GET', `/v1/runs/${reported.id}/activity`, { token: parties.agent.token });
    expect(activity.body.activity.filter((entry) => entry.kind === 'memory_suggestion').map((entry) => entry.summary)).toEqual([
      'memory proposed to the owner, kept as a suggestion: first fits',
      'memory proposed to the owner (read on a page), kept as a suggestion: second fits',
    ]);

    // Over MCP, the report's answer says what was kept.
    await call('POST', `/v1/memory-suggestions/sug_seed_${parties.owner.id}_0/decision`, { token: parties.owner.token, body: { decision: 'reject' } });
    const run = await newRun(parties.agent.token);
    const mcp = await SELF.fetch('http://127.0.0.1:8787/mcp', {
      method: 'POST',
      headers: { authorization: `Bearer ${parties.agent.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'run_report',
          arguments: {
            run_id: run.id,
            status: 'partial',
            summary: 'half done',
            memories: [
              { statement: 'via MCP', page_derived: true },
              { statement: 'no room', page_derived: false },
            ],
          },
        },
      }),
    });
    const result = ((await mcp.json()) as { result: { isError?: boolean; content: { text: string }[] } }).result;
    expect(result.isError).toBeUndefined();
    expect(result.content[0]?.text).toContain(
      `memories: 1 of 2 kept as suggestions for the owner to accept or reject; 1 not kept: the owner already has ${MAX_PENDING_SUGGESTIONS} suggestions waiting`,
    );
    const viaMcp = (await suggestionRows(parties.owner.id)).filter((row) => row.run_id === run.id);
    expect(viaMcp).toEqual([{ run_id: run.id, proposed_by: parties.agent.id, statement: 'via MCP', page_derived: 1, state: 'pending', memory_id: null }]);
  });

  it('are not recorded when the report is refused: a run already ended keeps no late proposals', async () => {
    const { run } = await reportWith([{ statement: 'kept once', page_derived: false }]);
    const late = await callError('POST', `/v1/runs/${run.id}/report`, {
      token: parties.agent.token,
      body: { status: 'completed', summary: 'again', memories: [{ statement: 'too late', page_derived: false }] },
    });
    expect([late.status, late.body.error.code]).toEqual([409, 'run_not_active']);
    expect((await suggestionRows(parties.owner.id)).map((row) => row.statement)).toEqual(['kept once']);
  });

  it('accept within the active-memory cap only: at the cap the acceptance is quota_exceeded and the suggestion stays pending', async () => {
    await reportWith([{ statement: 'one more fact', page_derived: false }]);
    const [suggestion] = await pendingOf();
    const insert = env.DB.prepare(
      "INSERT INTO memories (id, owner_id, statement, source, state, revision, created_at, updated_at) VALUES (?, ?, ?, 'owner', 'active', 1, 0, 0)",
    );
    await env.DB.batch(
      Array.from({ length: MAX_ACTIVE_MEMORIES }, (_, index) => insert.bind(`mem_cap_${parties.owner.id}_${index}`, parties.owner.id, `fact ${index}`)),
    );
    const refused = await callError('POST', `/v1/memory-suggestions/${suggestion!.id}/decision`, { token: parties.owner.token, body: { decision: 'accept' } });
    expect(refused).toEqual({
      status: 429,
      body: errorBody('quota_exceeded', `an owner keeps at most ${MAX_ACTIVE_MEMORIES} active memories; retire one first`),
    });
    expect((await pendingOf()).map((pending) => pending.id)).toEqual([suggestion!.id]);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM memories WHERE suggestion_id = ?').bind(suggestion!.id).first()).toEqual({ n: 0 });
    // A rejection needs no room.
    expect((await decide(suggestion!.id, { decision: 'reject' })).status).toBe(200);
  });
});
