import { type Context, Hono } from 'hono';
import { html } from 'hono/html';
import type { z } from 'zod';
import {
  CreateMemoryBody,
  MAX_ACTIVE_MEMORIES,
  MAX_MEMORY_STATEMENT_CHARS,
  MAX_PENDING_SUGGESTIONS,
  SuggestionDecisionBody,
  UpdateMemoryBody,
} from '../../shared/memories.ts';
import type { MemoryRow, MemorySuggestionRow } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { createMemory, listMemories, updateMemory } from '../memories/memories.ts';
import { decideSuggestion, listSuggestions, loadSuggestion } from '../memories/suggestions.ts';
import { humanDuration, layout, type Page, sections } from './pages.ts';
import { type ConsoleEnv, ownerOf, refusalAsNotice, requireCsrf } from './session-guard.ts';

// The owner's memories in the console (issue 34): what the owner has told the system about
// themselves, written, edited and retired here, and what agents suggested, accepted (in the
// owner's own words if they like) or rejected here. Every statement is text from an owner or an
// agent: it is only ever interpolated by hono/html, which escapes it.

const PATH = '/console/memories';

/** A textarea for a statement, its label, and `value` to start from. */
function statementField(id: string, label: string, value: string): Page {
  return html`<label for="${id}">${label}</label>
<textarea id="${id}" name="statement" class="statement" maxlength="${MAX_MEMORY_STATEMENT_CHARS}" required>${value}</textarea>`;
}

/** The hidden CSRF field of every form. */
function csrfField(csrfToken: string): Page {
  return html`<input type="hidden" name="csrf" value="${csrfToken}">`;
}

/** Who proposed a suggestion and where it came from, in words: a page-derived one is marked as not the owner's. */
function provenance(suggestion: MemorySuggestionRow): Page {
  return suggestion.pageDerived
    ? html`<p class="page-derived"><strong>Read on a page</strong> by agent ${suggestion.proposedBy} during run <a href="/console/runs/${suggestion.runId}">${suggestion.runId}</a>: a website said this, not you. Check it before you accept it.</p>`
    : html`<p>Proposed by agent ${suggestion.proposedBy} at the end of run <a href="/console/runs/${suggestion.runId}">${suggestion.runId}</a>, from what it understood of you.</p>`;
}

function suggestionArticle(suggestion: MemorySuggestionRow, csrfToken: string, now: number): Page {
  return html`<article class="approval" aria-labelledby="sug-${suggestion.id}">
<h3 id="sug-${suggestion.id}">Suggested ${humanDuration(now - suggestion.createdAt)} ago</h3>
<p class="statement-text">${suggestion.statement}</p>
${provenance(suggestion)}
<form method="post" action="/console/memory-suggestions/${suggestion.id}/decision">
${csrfField(csrfToken)}
${statementField(`accept-${suggestion.id}`, 'Remember it as (edit it into your own words if you like)', suggestion.statement)}
<div class="actions">
<button type="submit" name="decision" value="accept" class="approve">Accept</button>
<button type="submit" name="decision" value="reject" class="deny" formnovalidate>Reject</button>
</div>
</form>
</article>`;
}

function activeArticle(memory: MemoryRow, csrfToken: string): Page {
  return html`<article class="approval" aria-labelledby="mem-${memory.id}">
<h3 id="mem-${memory.id}" class="statement-text">${memory.statement}</h3>
<dl><dt>From</dt><dd>${memory.source === 'owner' ? 'you' : 'a suggestion you accepted'}</dd><dt>Revision</dt><dd>${memory.revision}</dd></dl>
<details>
<summary>Edit</summary>
<form method="post" action="${PATH}/${memory.id}/edit">
${csrfField(csrfToken)}
<input type="hidden" name="revision" value="${memory.revision}">
${statementField(`edit-${memory.id}`, 'New statement', memory.statement)}
<p><button type="submit" class="approve">Save</button></p>
</form>
</details>
<form method="post" action="${PATH}/${memory.id}/retire" class="actions">
${csrfField(csrfToken)}
<input type="hidden" name="revision" value="${memory.revision}">
<button type="submit" class="deny">Retire</button>
</form>
</article>`;
}

function retiredItem(memory: MemoryRow): Page {
  return html`<li><span class="statement-text">${memory.statement}</span> (retired ${memory.retiredAt === null ? '' : new Date(memory.retiredAt).toISOString()})</li>`;
}

/**
 * The Memories page: a form to add one, the suggestions waiting for the owner (page-derived ones
 * marked as such), the active memories with Edit and Retire, and the retired ones (kept, never
 * brought to a run again). `notice` says what the last form did.
 */
export function memoriesPage(memories: readonly MemoryRow[], pending: readonly MemorySuggestionRow[], csrfToken: string, now: number, notice?: string): Page {
  const active = memories.filter((memory) => memory.state === 'active');
  const retired = memories.filter((memory) => memory.state === 'retired');
  return layout(
    'Memories',
    html`${sections(PATH)}
<h2>Memories</h2>
${notice ? html`<p role="status">${notice}</p>` : ''}
<p>What you tell the system about yourself. When a run starts, only your active memories and your own request are used to anticipate what it needs; agents only ever suggest.</p>
<section aria-labelledby="add-heading"><h3 id="add-heading">Add a memory</h3>
<form method="post" action="${PATH}">
${csrfField(csrfToken)}
${statementField('new-statement', `In your own words (at most ${MAX_MEMORY_STATEMENT_CHARS} characters)`, '')}
<p><button type="submit" class="approve">Remember</button></p>
</form></section>
<section aria-labelledby="suggested-heading"><h3 id="suggested-heading">Suggested by agents (${pending.length} of at most ${MAX_PENDING_SUGGESTIONS} waiting)</h3>
${pending.length === 0 ? html`<p class="empty">No suggestions are waiting.</p>` : pending.map((suggestion) => suggestionArticle(suggestion, csrfToken, now))}
</section>
<section aria-labelledby="active-heading"><h3 id="active-heading">Active (${active.length} of at most ${MAX_ACTIVE_MEMORIES})</h3>
${active.length === 0 ? html`<p class="empty">No active memories.</p>` : active.map((memory) => activeArticle(memory, csrfToken))}
</section>
<section aria-labelledby="retired-heading"><h3 id="retired-heading">Retired</h3>
${retired.length === 0 ? html`<p class="empty">No retired memories.</p>` : html`<ul>${retired.map(retiredItem)}</ul>`}
</section>`,
    { csrfToken },
  );
}

/**
 * A form's fields checked by `schema`, as the API would check its body.
 * @throws DomainError('invalid_request') with the first issue's words.
 */
function formBody<T extends z.ZodType>(schema: T, fields: Record<string, unknown>): z.infer<T> {
  const parsed = schema.safeParse(fields);
  if (!parsed.success) throw new DomainError('invalid_request', parsed.error.issues[0]?.message ?? 'the form is not complete');
  return parsed.data;
}

/** A form field as text; undefined when absent, empty or a file. */
function textOf(form: Record<string, string | File>, name: string): string | undefined {
  const value = form[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A revision field as a number; undefined when absent. */
function revisionOf(form: Record<string, string | File>): number | undefined {
  const text = textOf(form, 'revision');
  return text === undefined ? undefined : Number(text);
}

/** Back to the Memories page with `notice`. */
function backWith(c: Context<ConsoleEnv>, notice: string) {
  return c.redirect(`${PATH}?notice=${encodeURIComponent(notice)}`, 303);
}

/** The Memories section (behind the console session; every post checks the session's CSRF token). */
export const memoriesSection = new Hono<ConsoleEnv>()
  .get(PATH, async (c) => {
    const owner = ownerOf(c.var.session);
    const [memories, pending] = await Promise.all([listMemories(c.var.ports, owner), listSuggestions(c.var.ports, owner, 'pending')]);
    return c.html(memoriesPage(memories, pending, c.var.session.csrfToken, c.var.ports.clock.now(), c.req.query('notice')));
  })
  .post(PATH, async (c) => {
    const form = await requireCsrf(c);
    const notice = await refusalAsNotice(async () => {
      await createMemory(c.var.ports, ownerOf(c.var.session), formBody(CreateMemoryBody, { statement: textOf(form, 'statement') }));
      return 'Remembered.';
    });
    return backWith(c, notice);
  })
  .post(`${PATH}/:id/edit`, async (c) => {
    const form = await requireCsrf(c);
    const notice = await refusalAsNotice(async () => {
      const body = formBody(UpdateMemoryBody, { statement: textOf(form, 'statement'), revision: revisionOf(form) });
      await updateMemory(c.var.ports, ownerOf(c.var.session), c.req.param('id'), body);
      return 'Saved.';
    });
    return backWith(c, notice);
  })
  .post(`${PATH}/:id/retire`, async (c) => {
    const form = await requireCsrf(c);
    const notice = await refusalAsNotice(async () => {
      const body = formBody(UpdateMemoryBody, { state: 'retired', revision: revisionOf(form) });
      await updateMemory(c.var.ports, ownerOf(c.var.session), c.req.param('id'), body);
      return 'Retired: it will not be brought to a run again.';
    });
    return backWith(c, notice);
  })
  .post('/console/memory-suggestions/:id/decision', async (c) => {
    const form = await requireCsrf(c);
    const notice = await refusalAsNotice(async () => {
      const owner = ownerOf(c.var.session);
      const decision = textOf(form, 'decision');
      const suggestion = await loadSuggestion(c.var.ports, owner, c.req.param('id'));
      // The statement only counts as the owner's own words when they changed it.
      const words = textOf(form, 'statement')?.trim();
      const statement = decision === 'accept' && words !== undefined && words !== suggestion.statement ? words : undefined;
      await decideSuggestion(c.var.ports, owner, suggestion.id, formBody(SuggestionDecisionBody, { decision, statement }));
      return decision === 'accept' ? 'Accepted: it is now one of your memories.' : 'Rejected.';
    });
    return backWith(c, notice);
  });
