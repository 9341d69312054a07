import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import type { RunView } from '../../shared/api.ts';
import type { MemoryList, MemoryView, SuggestionList } from '../../shared/memories.ts';
import { partiesForEachTest, workerdPorts } from './support/edge-client.ts';

// The console's Memories section (issue 34) on the Workers app over the real D1: the owner adds,
// edits and retires memories and decides agents' suggestions with the session's CSRF token;
// statements from owners and agents are escaped; a page-derived suggestion is marked as read on
// a page, not said by the owner.

const parties = partiesForEachTest();
const EDGE = 'http://127.0.0.1:8787';
const ORIGIN = 'http://127.0.0.1:8126';

const app = createApp(() => workerdPorts());

function request(method: string, path: string, init: { cookie?: string; form?: Record<string, string>; json?: unknown; token?: string } = {}) {
  return app.request(`${EDGE}${path}`, {
    method,
    redirect: 'manual',
    headers: {
      ...(init.cookie ? { Cookie: init.cookie } : {}),
      ...(init.token ? { Authorization: `Bearer ${init.token}` } : {}),
      ...(init.form ? { 'Content-Type': 'application/x-www-form-urlencoded', Origin: EDGE } : {}),
      ...(init.json !== undefined ? { 'Content-Type': 'application/json' } : {}),
    },
    ...(init.form ? { body: new URLSearchParams(init.form).toString() } : {}),
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
  });
}

async function signedIn() {
  const answer = await request('POST', '/console/sign-in', { form: { token: parties.owner.token } });
  expect(answer.status).toBe(303);
  const cookie = (answer.headers.get('Set-Cookie') ?? '').split(';')[0]!;
  const page = await (await request('GET', '/console/memories', { cookie })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  return { cookie, csrf: csrf! };
}

async function memoriesPage(cookie: string): Promise<string> {
  const answer = await request('GET', '/console/memories', { cookie });
  expect(answer.status).toBe(200);
  return answer.text();
}

async function activeMemories(): Promise<MemoryView[]> {
  return ((await (await request('GET', '/v1/memories?state=active', { token: parties.owner.token })).json()) as MemoryList).memories;
}

/** A report of a fresh agent run proposing `memories`. */
async function reportWith(memories: unknown[]): Promise<void> {
  const created = await request('POST', '/v1/runs', { token: parties.agent.token, json: { profile_id: 'notes', intent: 'take notes', origins: [ORIGIN] } });
  const run = (await created.json()) as RunView;
  const reported = await request('POST', `/v1/runs/${run.id}/report`, { token: parties.agent.token, json: { status: 'completed', summary: 'done', memories } });
  expect(reported.status).toBe(200);
}

describe("the console's Memories section", () => {
  it('adds, edits and retires memories with the session and its CSRF token, and lists active and retired ones', async () => {
    const { cookie, csrf } = await signedIn();
    const added = await request('POST', '/console/memories', { cookie, form: { csrf, statement: 'I prefer aisle seats.' } });
    expect([added.status, added.headers.get('Location')]).toEqual([303, `/console/memories?notice=${encodeURIComponent('Remembered.')}`]);
    const [memory] = await activeMemories();
    expect(memory).toMatchObject({ statement: 'I prefer aisle seats.', source: 'owner', revision: 1 });

    const edited = await request('POST', `/console/memories/${memory!.id}/edit`, {
      cookie,
      form: { csrf, statement: 'I prefer window seats.', revision: '1' },
    });
    expect(edited.status).toBe(303);
    expect((await activeMemories())[0]).toMatchObject({ statement: 'I prefer window seats.', revision: 2 });
    // A form from an older page (revision 1) is refused in words, and changes nothing.
    const stale = await request('POST', `/console/memories/${memory!.id}/edit`, { cookie, form: { csrf, statement: 'I prefer the aisle.', revision: '1' } });
    expect(decodeURIComponent(stale.headers.get('Location') ?? '')).toContain('Not done: memory');
    expect((await activeMemories())[0]?.statement).toBe('I prefer window seats.');

    let page = await memoriesPage(cookie);
    expect(page).toContain('<nav aria-label="Console">');
    expect(page).toContain('<a href="/console/memories" aria-current="page">Memories</a>');
    expect(page).toContain('I prefer window seats.');
    expect(page).toContain(`action="/console/memories/${memory!.id}/retire"`);

    const retired = await request('POST', `/console/memories/${memory!.id}/retire`, { cookie, form: { csrf, revision: '2' } });
    expect(retired.status).toBe(303);
    expect(await activeMemories()).toEqual([]);
    page = await memoriesPage(cookie);
    expect(page).toContain('No active memories.');
    expect(page).toMatch(/<h3 id="retired-heading">Retired<\/h3>\s*<ul><li><span class="statement-text">I prefer window seats\.<\/span>/);
    expect(page).not.toContain(`action="/console/memories/${memory!.id}/retire"`);
  });

  it('refuses posts without the session or its CSRF token, and hidden characters, changing nothing', async () => {
    const { cookie, csrf } = await signedIn();
    const noCsrf = await request('POST', '/console/memories', { cookie, form: { statement: 'sneaky' } });
    expect(noCsrf.status).toBe(403);
    const noSession = await request('POST', '/console/memories', { form: { csrf, statement: 'sneaky' } });
    expect(noSession.status).toBe(401);
    const hidden = await request('POST', '/console/memories', { cookie, form: { csrf, statement: 'pay \u202Eevil' } });
    expect(decodeURIComponent(hidden.headers.get('Location') ?? '')).toContain('Not done: a statement holds no control, format or unassigned characters.');
    expect(await env.DB.prepare('SELECT count(*) AS n FROM memories WHERE owner_id = ?').bind(parties.owner.id).first()).toEqual({ n: 0 });
  });

  it('shows pending suggestions escaped, marks a page-derived one as read on a page, and accepts (in the owner\u2019s words) or rejects them', async () => {
    await reportWith([
      { statement: '<script>alert("owner")</script> likes tea', page_derived: false },
      { statement: 'The site says: <img src=x onerror=alert(1)> you owe 40 EUR', page_derived: true },
      { statement: 'Ignore this one', page_derived: false },
    ]);
    const { cookie, csrf } = await signedIn();
    const page = await memoriesPage(cookie);
    expect(page).not.toContain('<script>alert');
    expect(page).not.toContain('<img src=x');
    expect(page).toContain('&lt;script&gt;alert(&quot;owner&quot;)&lt;/script&gt; likes tea');
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt; you owe 40 EUR');
    const suggestions = ((await (await request('GET', '/v1/memory-suggestions', { token: parties.owner.token })).json()) as SuggestionList).suggestions;
    const byStatement = new Map(suggestions.map((suggestion) => [suggestion.statement, suggestion]));
    const pageDerived = byStatement.get('The site says: <img src=x onerror=alert(1)> you owe 40 EUR')!;
    const tea = byStatement.get('<script>alert("owner")</script> likes tea')!;
    const ignored = byStatement.get('Ignore this one')!;
    // The page-derived one, and only it, is marked as a page's words.
    const articles = page.split('<article ').slice(1);
    const articleOf = (id: string) => articles.find((article) => article.includes(`sug-${id}`)) ?? '';
    expect(articleOf(pageDerived.id)).toContain('<p class="page-derived"><strong>Read on a page</strong>');
    expect(articleOf(pageDerived.id)).toContain('a website said this, not you');
    expect(articleOf(tea.id)).not.toContain('Read on a page');
    expect(page).toContain('3 of at most 50 waiting');

    const acceptedAsIs = await request('POST', `/console/memory-suggestions/${tea.id}/decision`, {
      cookie,
      form: { csrf, decision: 'accept', statement: tea.statement },
    });
    expect(decodeURIComponent(acceptedAsIs.headers.get('Location') ?? '')).toContain('Accepted: it is now one of your memories.');
    const reworded = await request('POST', `/console/memory-suggestions/${pageDerived.id}/decision`, {
      cookie,
      form: { csrf, decision: 'accept', statement: 'I may owe the site 40 EUR; check the invoice.' },
    });
    expect(reworded.status).toBe(303);
    const rejected = await request('POST', `/console/memory-suggestions/${ignored.id}/decision`, {
      cookie,
      form: { csrf, decision: 'reject', statement: ignored.statement },
    });
    expect(decodeURIComponent(rejected.headers.get('Location') ?? '')).toContain('Rejected.');
    const again = await request('POST', `/console/memory-suggestions/${ignored.id}/decision`, { cookie, form: { csrf, decision: 'accept', statement: 'x' } });
    expect(decodeURIComponent(again.headers.get('Location') ?? '')).toContain('Not done: the suggestion was already rejected; a decision is final.');

    const memories = await activeMemories();
    expect(memories.map((memory) => [memory.statement, memory.source, memory.suggestion_id]).toSorted()).toEqual(
      [
        [tea.statement, 'suggestion', tea.id],
        ['I may owe the site 40 EUR; check the invoice.', 'suggestion', pageDerived.id],
      ].toSorted(),
    );
    const after = await memoriesPage(cookie);
    expect(after).toContain('No suggestions are waiting.');
    expect(after).toContain('a suggestion you accepted');
    expect(after).toContain('&lt;script&gt;alert(&quot;owner&quot;)&lt;/script&gt; likes tea');
  });

  it("never shows or decides another owner's suggestion", async () => {
    await reportWith([{ statement: 'private to the first owner', page_derived: false }]);
    const suggestions = ((await (await request('GET', '/v1/memory-suggestions', { token: parties.owner.token })).json()) as SuggestionList).suggestions;
    const answer = await request('POST', '/console/sign-in', { form: { token: parties.strangerOwner.token } });
    const cookie = (answer.headers.get('Set-Cookie') ?? '').split(';')[0]!;
    const page = await memoriesPage(cookie);
    expect(page).not.toContain('private to the first owner');
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
    const decided = await request('POST', `/console/memory-suggestions/${suggestions[0]!.id}/decision`, { cookie, form: { csrf, decision: 'accept' } });
    expect(decodeURIComponent(decided.headers.get('Location') ?? '')).toContain(`Not done: no memory suggestion ${suggestions[0]!.id}.`);
    expect(await env.DB.prepare('SELECT state FROM memory_suggestions WHERE id = ?').bind(suggestions[0]!.id).first()).toEqual({ state: 'pending' });
  });
});
