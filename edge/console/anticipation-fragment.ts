import { html } from 'hono/html';
import type { AnticipationRecordView, RefusalReason } from '../../shared/memories.ts';
import type { MemorySuggestionRow } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { anticipationRecordOf } from '../memories/anticipation-views.ts';
import { suggestionsOfRun } from '../memories/suggestions.ts';
import type { Ports } from '../ports.ts';
import type { Page } from './pages.ts';

/** Why a prediction was refused, in the owner's words (issue 34). */
const REFUSAL_WORDS: Record<RefusalReason, string> = {
  schema: 'it did not cite exactly one memory',
  unknown_memory: 'it cited no memory of yours',
  retired_memory: 'it cited a memory you retired',
  other_owner: "it cited another owner's memory",
  compound: 'it joined this memory with another one',
  not_asserted: 'it said something the memory does not say',
  duplicate: 'it repeated a memory already brought',
};

/**
 * A run's memories on its console page (issue 34): what its anticipation brought (your own
 * statements, as the agent sees them), or why it was off; every refused prediction with its reason
 * (for the owner only: the agent never sees these); and what the agent suggested remembering, with
 * their state and a link to decide them. Runs made before memories existed show only suggestions.
 */
export async function runMemoriesFragment(ports: Ports, runId: string): Promise<Page> {
  const [record, suggestions] = await Promise.all([recordOrNone(ports, runId), suggestionsOfRun(ports, runId)]);
  return html`<section aria-labelledby="memories-heading"><h3 id="memories-heading">Memories</h3>
${record ? anticipationPart(record) : html`<p class="empty">This run was made before memories existed.</p>`}
${suggestionsPart(suggestions)}</section>`;
}

function anticipationPart(record: AnticipationRecordView): Page {
  const { anticipation } = record;
  const decided = `${anticipation.provider}, policy ${anticipation.policy_profile} version ${anticipation.policy_version}, ${record.provider_calls} provider call${record.provider_calls === 1 ? '' : 's'}`;
  const brought =
    anticipation.state === 'off'
      ? html`<p>Anticipation was off: ${anticipation.message ?? anticipation.reason} (${decided}).</p>`
      : record.anticipated.length === 0
        ? html`<p>Anticipation brought none of your memories (${decided}).</p>`
        : html`<p>Brought to the agent as your own statements (${decided}):</p>
<ul class="anticipated">${record.anticipated.map((memory) => html`<li>${memory.statement}</li>`)}</ul>`;
  const refused =
    record.refused.length === 0
      ? ''
      : html`<p>Refused by the verifier, never shown to the agent:</p>
<ul class="refused">${record.refused.map((prediction) => html`<li>“${prediction.statement}”: ${REFUSAL_WORDS[prediction.reason]}${prediction.memory_id ? ` (${prediction.memory_id})` : ''}</li>`)}</ul>`;
  return html`${brought}${refused}`;
}

function suggestionsPart(suggestions: readonly MemorySuggestionRow[]): Page {
  if (suggestions.length === 0) return html`<p class="empty">The agent suggested nothing to remember.</p>`;
  return html`<p>The agent suggested remembering (decide on <a href="/console/memories">Memories</a>):</p>
<ul class="suggestions">${suggestions.map(
    (suggestion) =>
      html`<li>${suggestion.statement} · ${suggestion.state}${suggestion.pageDerived ? html` · <strong>read on a page</strong>, not said by you` : ''}</li>`,
  )}</ul>`;
}

async function recordOrNone(ports: Ports, runId: string): Promise<AnticipationRecordView | null> {
  try {
    return await anticipationRecordOf(ports, runId);
  } catch (error) {
    if (error instanceof DomainError && error.code === 'not_found') return null;
    throw error;
  }
}
