import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { RunView } from '../../shared/api.ts';
import { MAX_ACTIVE_MEMORIES, MAX_MEMORY_STATEMENT_CHARS, MAX_PENDING_SUGGESTIONS, type MemoryView, type SuggestionList } from '../../shared/memories.ts';
import { call, callError, partiesForEachTest } from './support/edge-client.ts';
import { runFixture } from './support/run-fixture.ts';

// Memories and suggestions against hostile input and hostile timing (issue 34): bad input is a
// typed 4xx that changes nothing; hidden characters never become a statement; agents cannot
// make or decide memories; other owners' ids are not found; racing decisions and racing writes
// at the bounds answer exactly as many winners as there is room for.

const parties = partiesForEachTest();
const { newRun } = runFixture(parties);

/** Everything memories and suggestions hold, for "nothing changed". */
async function snapshot() {
  const memories = await env.DB.prepare('SELECT * FROM memories ORDER BY id').all();
  const suggestions = await env.DB.prepare('SELECT * FROM memory_suggestions ORDER BY id').all();
  return { memories: memories.results, suggestions: suggestions.results };
}

async function pendingSuggestions(token = parties.owner.token) {
  return (await call<SuggestionList>('GET', '/v1/memory-suggestions?state=pending', { token })).body.suggestions;
}

async function countOf(sql: string, ...binds: unknown[]): Promise<number> {
  return (
    (await env.DB.prepare(sql)
      .bind(...binds)
      .first<{ n: number }>()) ?? { n: -1 }
  ).n;
}

const HIDDEN = {
  bidiOverride: 'Pay \u202Eeciovni\u202C today',
  zeroWidthSpace: 'my PIN is\u200B 1234',
  zeroWidthJoiner: 'ok\u200Dnot',
  byteOrderMark: 'hid\uFEFFden',
  nul: 'a\u0000b',
  privateUse: 'a\uE000b',
};

describe('memories refuse hostile input', () => {
  it('answers bad bodies, statements with hidden characters, 501-character statements and bad queries with invalid_request, changing nothing', async () => {
    const made = await call<MemoryView>('POST', '/v1/memories', { token: parties.owner.token, body: { statement: 'a plain fact' } });
    const before = await snapshot();
    const owner = parties.owner.token;
    const tooLong = 'x'.repeat(MAX_MEMORY_STATEMENT_CHARS + 1);
    const answers = [
      ...Object.values(HIDDEN).map((statement) => callError('POST', '/v1/memories', { token: owner, body: { statement } })),
      callError('POST', '/v1/memories', { token: owner, body: { statement: tooLong } }),
      callError('POST', '/v1/memories', { token: owner, body: { statement: '   ' } }),
      callError('POST', '/v1/memories', { token: owner, body: { statement: 'ok', source: 'suggestion' } }),
      callError('POST', '/v1/memories', { token: owner, body: { statement: 42 } }),
      callError('POST', '/v1/memories', { token: owner, raw: '{"statement":' }),
      callError('PATCH', `/v1/memories/${made.body.id}`, { token: owner, body: { statement: HIDDEN.bidiOverride } }),
      callError('PATCH', `/v1/memories/${made.body.id}`, { token: owner, body: { statement: tooLong } }),
      callError('PATCH', `/v1/memories/${made.body.id}`, { token: owner, body: { statement: 'new', state: 'retired' } }),
      callError('PATCH', `/v1/memories/${made.body.id}`, { token: owner, body: {} }),
      callError('PATCH', `/v1/memories/${made.body.id}`, { token: owner, body: { state: 'active' } }),
      callError('PATCH', `/v1/memories/${made.body.id}`, { token: owner, body: { state: 'retired', revision: 0 } }),
      callError('GET', '/v1/memories?state=forgotten', { token: owner }),
      callError('GET', '/v1/memories?limit=5', { token: owner }),
      callError('GET', '/v1/memory-suggestions?state=maybe', { token: owner }),
    ];
    const settled = await Promise.all(answers);
    expect(settled.map((answer) => [answer.status, answer.body.error?.code])).toEqual([
      ...Object.keys(HIDDEN).map(() => [400, 'invalid_request']),
      ...Array.from({ length: 4 }, () => [400, 'invalid_request']),
      [400, 'malformed_json'],
      ...Array.from({ length: 9 }, () => [400, 'invalid_request']),
    ]);
    expect(settled[0]?.body.error.message).toContain('a statement holds no control, format or unassigned characters');
    expect(settled[Object.keys(HIDDEN).length]?.body.error.message).toContain(`a statement is at most ${MAX_MEMORY_STATEMENT_CHARS} characters`);
    expect(await snapshot()).toEqual(before);
    // Exactly 500 characters is a statement.
    expect((await call('POST', '/v1/memories', { token: owner, body: { statement: 'y'.repeat(MAX_MEMORY_STATEMENT_CHARS) } })).status).toBe(201);
  });

  it('refuses a report whose proposed memories hide characters, are too many or do not say whether a page said them: the run goes on and nothing is suggested', async () => {
    const run = await newRun(parties.agent.token);
    const before = await snapshot();
    const bodies = [
      {
        memories: [
          { statement: 'fine', page_derived: false },
          { statement: HIDDEN.zeroWidthSpace, page_derived: false },
        ],
      },
      { memories: [{ statement: HIDDEN.bidiOverride, page_derived: true }] },
      { memories: Array.from({ length: 9 }, (_, index) => ({ statement: `fact ${index}`, page_derived: false })) },
      { memories: [{ statement: 'x'.repeat(MAX_MEMORY_STATEMENT_CHARS + 1), page_derived: false }] },
      { memories: [{ statement: 'fine', page_derived: 'yes' }] },
      { memories: [{ statement: 'fine', page_derived: false, memory_id: 'mem_x' }] },
      // Where a proposal came from is the agent's to say, every time: left out, it is refused, not taken as the owner's.
      { memories: [{ statement: 'The site says the owner is premium' }] },
    ];
    for (const extra of bodies) {
      const answer = await callError('POST', `/v1/runs/${run.id}/report`, {
        token: parties.agent.token,
        body: { status: 'completed', summary: 'done', ...extra },
      });
      expect([answer.status, answer.body.error.code]).toEqual([400, 'invalid_request']);
    }
    expect(await snapshot()).toEqual(before);
    expect((await call<RunView>('GET', `/v1/runs/${run.id}`, { token: parties.agent.token })).body.state).toBe('running');
  });

  it('records no suggestion from a report refused because a call is in flight', async () => {
    const run = await newRun(parties.agent.token);
    await env.DB.prepare(
      "INSERT INTO tool_calls (id, run_id, principal_id, tool, version, arguments, arguments_hash, state, phases, deadline_at, created_at, updated_at) VALUES (?, ?, ?, 'browser.act', '1.2.0', '{}', 'x', 'dispatching', '{}', ?, ?, ?)",
    )
      .bind(`call_inflight_${run.id}`, run.id, parties.agent.id, Date.now() + 60_000, Date.now(), Date.now())
      .run();
    const answer = await callError('POST', `/v1/runs/${run.id}/report`, {
      token: parties.agent.token,
      body: { status: 'completed', summary: 'done', memories: [{ statement: 'while a call is in flight', page_derived: false }] },
    });
    expect([answer.status, answer.body.error.code]).toEqual([409, 'call_in_progress']);
    expect(await countOf('SELECT count(*) AS n FROM memory_suggestions WHERE run_id = ?', run.id)).toBe(0);
  });
});

describe('memories and suggestions refuse the wrong principals', () => {
  it("lets no agent or operator list or decide suggestions, and answers another owner's suggestion as not found", async () => {
    const run = await newRun(parties.agent.token);
    await call('POST', `/v1/runs/${run.id}/report`, {
      token: parties.agent.token,
      body: { status: 'completed', summary: 'done', memories: [{ statement: 'mine', page_derived: false }] },
    });
    const [suggestion] = await pendingSuggestions();
    const before = await snapshot();
    const path = `/v1/memory-suggestions/${suggestion!.id}/decision`;
    const answers = [
      await callError('POST', path, { token: parties.agent.token, body: { decision: 'accept' } }),
      await callError('POST', path, { token: parties.secondAgent.token, body: { decision: 'accept' } }),
      await callError('POST', path, { token: parties.operator.token, body: { decision: 'accept' } }),
      await callError('GET', '/v1/memory-suggestions', { token: parties.agent.token }),
      await callError('POST', path, { token: parties.strangerOwner.token, body: { decision: 'accept' } }),
      await callError('POST', path, { token: parties.strangerAgent.token, body: { decision: 'reject' } }),
      await callError('POST', path, { token: parties.owner.token, body: { decision: 'reject', statement: 'words' } }),
      await callError('POST', path, { token: parties.owner.token, body: { decision: 'accept', statement: HIDDEN.zeroWidthJoiner } }),
      await callError('POST', path, { token: parties.owner.token, body: { decision: 'maybe' } }),
      await callError('POST', '/v1/memory-suggestions/sug_nothing/decision', { token: parties.owner.token, body: { decision: 'accept' } }),
    ];
    expect(answers.map((answer) => [answer.status, answer.body.error.code])).toEqual([
      [403, 'forbidden'],
      [403, 'forbidden'],
      [403, 'forbidden'],
      [403, 'forbidden'],
      [404, 'not_found'],
      [403, 'forbidden'],
      [400, 'invalid_request'],
      [400, 'invalid_request'],
      [400, 'invalid_request'],
      [404, 'not_found'],
    ]);
    expect(await snapshot()).toEqual(before);
  });
});

describe('memories and suggestions under racing writes', () => {
  it('answer a racing accept and reject of one suggestion with one winner, the other already_decided', async () => {
    const run = await newRun(parties.agent.token);
    const memories = Array.from({ length: 6 }, (_, index) => ({ statement: `race fact ${index}`, page_derived: false }));
    await call('POST', `/v1/runs/${run.id}/report`, { token: parties.agent.token, body: { status: 'completed', summary: 'done', memories } });
    for (const suggestion of await pendingSuggestions()) {
      const path = `/v1/memory-suggestions/${suggestion.id}/decision`;
      const answers = await Promise.all([
        callError('POST', path, { token: parties.owner.token, body: { decision: 'accept' } }),
        callError('POST', path, { token: parties.owner.token, body: { decision: 'reject' } }),
        callError('POST', path, { token: parties.owner.token, body: { decision: 'accept', statement: 'my words' } }),
      ]);
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
      expect(answers.filter((answer) => answer.status !== 200).map((answer) => [answer.status, answer.body.error.code])).toEqual([
        [409, 'already_decided'],
        [409, 'already_decided'],
      ]);
      const state = (await env.DB.prepare('SELECT state FROM memory_suggestions WHERE id = ?').bind(suggestion.id).first<{ state: string }>())?.state;
      expect(await countOf('SELECT count(*) AS n FROM memories WHERE suggestion_id = ?', suggestion.id)).toBe(state === 'accepted' ? 1 : 0);
    }
  });

  it('keep the active-memory cap under racing acceptances and creates', async () => {
    const insert = env.DB.prepare(
      "INSERT INTO memories (id, owner_id, statement, source, state, revision, created_at, updated_at) VALUES (?, ?, ?, 'owner', 'active', 1, 0, 0)",
    );
    await env.DB.batch(
      Array.from({ length: MAX_ACTIVE_MEMORIES - 3 }, (_, index) => insert.bind(`mem_race_${parties.owner.id}_${index}`, parties.owner.id, `fact ${index}`)),
    );
    const run = await newRun(parties.agent.token);
    const memories = Array.from({ length: 6 }, (_, index) => ({ statement: `suggested ${index}`, page_derived: false }));
    await call('POST', `/v1/runs/${run.id}/report`, { token: parties.agent.token, body: { status: 'completed', summary: 'done', memories } });
    const suggestions = await pendingSuggestions();
    const answers = await Promise.all([
      ...suggestions.map((suggestion) =>
        callError('POST', `/v1/memory-suggestions/${suggestion.id}/decision`, { token: parties.owner.token, body: { decision: 'accept' } }),
      ),
      ...Array.from({ length: 3 }, (_, index) => callError('POST', '/v1/memories', { token: parties.owner.token, body: { statement: `created ${index}` } })),
    ]);
    expect(answers.filter((answer) => answer.status < 300)).toHaveLength(3);
    expect(answers.filter((answer) => answer.status >= 300).map((answer) => [answer.status, answer.body.error.code])).toEqual(
      Array.from({ length: 6 }, () => [429, 'quota_exceeded']),
    );
    expect(await countOf("SELECT count(*) AS n FROM memories WHERE owner_id = ? AND state = 'active'", parties.owner.id)).toBe(MAX_ACTIVE_MEMORIES);
    // Every memory made from a suggestion is named by exactly that accepted suggestion.
    expect(
      await countOf(
        "SELECT count(*) AS n FROM memories m JOIN memory_suggestions s ON s.id = m.suggestion_id WHERE m.owner_id = ? AND (s.state != 'accepted' OR s.memory_id != m.id)",
        parties.owner.id,
      ),
    ).toBe(0);
    expect(await countOf("SELECT count(*) AS n FROM memory_suggestions WHERE owner_id = ? AND state = 'accepted'", parties.owner.id)).toBe(
      await countOf("SELECT count(*) AS n FROM memories WHERE owner_id = ? AND source = 'suggestion'", parties.owner.id),
    );
  });

  it(`keep the ${MAX_PENDING_SUGGESTIONS}-pending bound under racing reports of one owner's runs`, async () => {
    const insert = env.DB.prepare(
      "INSERT INTO memory_suggestions (id, owner_id, run_id, proposed_by, statement, page_derived, state, created_at) VALUES (?, ?, 'run_seed', 'prn_seed', ?, 0, 'pending', 0)",
    );
    await env.DB.batch(
      Array.from({ length: MAX_PENDING_SUGGESTIONS - 5 }, (_, index) =>
        insert.bind(`sug_race_${parties.owner.id}_${index}`, parties.owner.id, `seed ${index}`),
      ),
    );
    const runs = await Promise.all([newRun(parties.agent.token), newRun(parties.secondAgent.token)]);
    const memories = Array.from({ length: 8 }, (_, index) => ({ statement: `proposal ${index}`, page_derived: false }));
    const answers = await Promise.all(
      runs.map((run, index) =>
        call<RunView>('POST', `/v1/runs/${run.id}/report`, {
          token: index === 0 ? parties.agent.token : parties.secondAgent.token,
          body: { status: 'completed', summary: 'done', memories },
        }),
      ),
    );
    expect(answers.map((answer) => [answer.status, answer.body.state])).toEqual([
      [200, 'completed'],
      [200, 'completed'],
    ]);
    expect(await countOf("SELECT count(*) AS n FROM memory_suggestions WHERE owner_id = ? AND state = 'pending'", parties.owner.id)).toBe(
      MAX_PENDING_SUGGESTIONS,
    );
  });
});
