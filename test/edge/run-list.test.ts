import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { hostProfileId } from '../../edge/profiles/bindings.ts';
import { encodeRunCursor } from '../../edge/runs/list-cursor.ts';
import type { RunList, RunView } from '../../shared/api.ts';
import { call, callError, errorBody, partiesForEachTest } from './support/edge-client.ts';
import { ORIGIN, runFixture } from './support/run-fixture.ts';

// GET /v1/runs (issue 32): an owner's own runs, every run for an operator, filtered by state and
// profile, newest first a page at a time by an opaque cursor.

const parties = partiesForEachTest();
const { newRun } = runFixture(parties);

/** Inserts a run of `ownerId` straight into D1 (no rate limit or quota), as recorded at `createdAt`. */
async function storedRun(ownerId: string, id: string, createdAt: number, fields: { state?: string; profile?: string } = {}): Promise<void> {
  await env.DB.prepare(
    `INSERT INTO runs (id, owner_id, created_by, profile_id, intent, origins, state, deadline_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, 'listed', ?, ?, ?, ?, ?)`,
  )
    .bind(id, ownerId, ownerId, fields.profile ?? 'listed', JSON.stringify([ORIGIN]), fields.state ?? 'completed', createdAt + 60_000, createdAt, createdAt)
    .run();
}

/** Every page of `query` for `token`, `limit` at a time from `cursor`: the ids in order, and how many pages. */
async function allPages(token: string, query: string, limit: number, from: string | null = null): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor = from;
  let pages = 0;
  do {
    const answer: { status: number; body: RunList } = await call<RunList>('GET', `/v1/runs?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, {
      token,
    });
    expect(answer.status).toBe(200);
    expect(answer.body.runs.length).toBeLessThanOrEqual(limit);
    ids.push(...answer.body.runs.map((run) => run.id));
    cursor = answer.body.next_cursor;
    pages += 1;
  } while (cursor !== null && pages < 100);
  return { ids, pages };
}

describe('GET /v1/runs', () => {
  it('an owner sees only their own runs, newest first, each as GET /v1/runs/{id} shows it', async () => {
    const first = await newRun(parties.owner.token);
    const second = await newRun(parties.agent.token);
    await newRun(parties.strangerOwner.token);
    const answer = await call<RunList>('GET', '/v1/runs', { token: parties.owner.token });
    expect(answer.status).toBe(200);
    const own = await Promise.all([second, first].map(async (run) => (await call<RunView>('GET', `/v1/runs/${run.id}`, { token: parties.owner.token })).body));
    expect(answer.body).toEqual({ runs: own, next_cursor: null });
  });

  it("an operator sees every owner's runs", async () => {
    const profile = `ops-${crypto.randomUUID().slice(0, 8)}`;
    const mine = await newRun(parties.owner.token, { profile_id: profile });
    const theirs = await newRun(parties.strangerOwner.token, { profile_id: profile });
    const answer = await call<RunList>('GET', `/v1/runs?profile_id=${profile}`, { token: parties.operator.token });
    expect(answer.body.runs.map((run) => run.id).sort()).toEqual([mine.id, theirs.id].sort());
  });

  it('an agent is refused, and so is a request without a token', async () => {
    expect(await callError('GET', '/v1/runs', { token: parties.agent.token })).toEqual({
      status: 403,
      body: errorBody('forbidden', 'this endpoint is for owner or operator principals, not agent'),
    });
    expect(await callError('GET', '/v1/runs')).toEqual({ status: 401, body: errorBody('unauthenticated', 'send Authorization: Bearer <token>') });
  });

  it('filters by state, by profile, and by both', async () => {
    const owner = parties.owner.id;
    const at = Date.now();
    await storedRun(owner, `run_f_${owner}_1`, at + 1, { state: 'cancelled', profile: 'work' });
    await storedRun(owner, `run_f_${owner}_2`, at + 2, { state: 'completed', profile: 'work' });
    await storedRun(owner, `run_f_${owner}_3`, at + 3, { state: 'cancelled', profile: 'home' });
    await storedRun(parties.strangerOwner.id, `run_f_${owner}_4`, at + 4, { state: 'cancelled', profile: 'work' });
    const ids = async (query: string) =>
      (await call<RunList>('GET', `/v1/runs?${query}`, { token: parties.owner.token })).body.runs.map((run) => run.id.slice(-1));
    expect(await ids('state=cancelled')).toEqual(['3', '1']);
    expect(await ids('profile_id=work')).toEqual(['2', '1']);
    expect(await ids('state=cancelled&profile_id=work')).toEqual(['1']);
    expect(await ids('state=running')).toEqual([]);
  });

  it('pages through runs created at the same instant without repeating or skipping one, even as new runs arrive', async () => {
    const owner = parties.owner.id;
    const at = Date.now() - 100_000;
    const stored: { id: string; createdAt: number }[] = [];
    // 45 runs over 15 instants, three at each: the id orders runs of one instant.
    for (let index = 0; index < 45; index += 1) {
      const run = { id: `run_p_${owner}_${String((index * 7) % 45).padStart(2, '0')}`, createdAt: at + Math.floor(index / 3) };
      stored.push(run);
      await storedRun(owner, run.id, run.createdAt, { profile: 'paged' });
    }
    const newestFirst = [...stored].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1)).map((run) => run.id);

    const firstPage = await call<RunList>('GET', '/v1/runs?profile_id=paged', { token: parties.owner.token });
    expect(firstPage.body.runs.map((run) => run.id)).toEqual(newestFirst.slice(0, 20));
    // A run created after the first page was read is not on the later ones.
    await storedRun(owner, `run_p_${owner}_new`, Date.now(), { profile: 'paged' });
    const rest = await allPages(parties.owner.token, 'profile_id=paged', 20, firstPage.body.next_cursor);
    expect([...firstPage.body.runs.map((run) => run.id), ...rest.ids]).toEqual(newestFirst);

    for (const limit of [1, 7, 15, 44, 45, 100]) {
      const pages = await allPages(parties.owner.token, 'profile_id=paged&state=completed', limit);
      expect(pages.ids).toEqual([`run_p_${owner}_new`, ...newestFirst]);
      expect(pages.pages).toBe(Math.ceil(46 / limit));
    }
  });

  it("shows each run with its profile placement, as the run's own view does", async () => {
    const run = await newRun(parties.owner.token);
    await env.DB.prepare(
      "INSERT INTO profile_placements (host_profile_id, host_id, generation, reason, placed_at) VALUES (?, 'hst_listed', 2, 'host_draining', ?)",
    )
      .bind(await hostProfileId(parties.owner.id, run.profile_id), Date.now())
      .run();
    const listed = await call<RunList>('GET', '/v1/runs', { token: parties.owner.token });
    const alone = await call<RunView>('GET', `/v1/runs/${run.id}`, { token: parties.owner.token });
    expect(listed.body.runs).toEqual([alone.body]);
    expect(alone.body.placement).toMatchObject({ host_id: 'hst_listed', generation: 2, reason: 'host_draining' });
  });

  it('a cursor the edge did not make is 400 invalid_cursor; a bad limit or state is 400 invalid_request', async () => {
    const refusal = errorBody('invalid_cursor', "cursor: not a cursor this edge made; pass a page's next_cursor as it was given, or none for the first page");
    const padded = `${encodeRunCursor({ createdAt: 5, id: 'run_x' })}=`;
    for (const cursor of ['not*base64', 'bm90IGEgY3Vyc29y', padded, btoa('-5.run_x').replace(/=+$/, ''), btoa('5.run x').replace(/=+$/, ''), 'A']) {
      expect(await callError('GET', `/v1/runs?cursor=${encodeURIComponent(cursor)}`, { token: parties.owner.token }), cursor).toEqual({
        status: 400,
        body: refusal,
      });
    }
    const limit = '✖ an integer from 1 to 100\n  → at limit';
    expect(await callError('GET', '/v1/runs?limit=0', { token: parties.owner.token })).toEqual({ status: 400, body: errorBody('invalid_request', limit) });
    expect(await callError('GET', '/v1/runs?limit=101', { token: parties.owner.token })).toEqual({ status: 400, body: errorBody('invalid_request', limit) });
    expect(await callError('GET', '/v1/runs?limit=ten', { token: parties.owner.token })).toEqual({ status: 400, body: errorBody('invalid_request', limit) });
    const state = await callError('GET', '/v1/runs?state=finished', { token: parties.owner.token });
    expect([state.status, state.body.error.code]).toEqual([400, 'invalid_request']);
  });
});
