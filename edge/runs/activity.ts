import { type ActivityList, TERMINAL_RUN_STATES } from '../../shared/api.ts';
import type { MemorySuggestionRow, RunRow } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { suggestionsOfRun } from '../memories/suggestions.ts';
import type { Ports } from '../ports.ts';
import { type RunRecord, runRecordOf } from './record.ts';

/**
 * The run's passive activity record, oldest first: messages, calls, approvals, effects, sign-in
 * waits, ceremony events and the memories its report proposed that were kept as suggestions.
 * Routine recovery is recorded here, never as an owner notice.
 */
export async function runActivity(ports: Ports, run: RunRow): Promise<ActivityList> {
  const [record, suggestions] = await Promise.all([runRecordOf(ports, run), suggestionsOfRun(ports, run.id)]);
  return activityOf(record, suggestions);
}

/**
 * The agent's view of a run's record ({@link RunRecord}): one summary line per entry, oldest
 * first. A suggestion says it was kept for the owner, never what the owner decided.
 */
export function activityOf(record: RunRecord, suggestions: readonly MemorySuggestionRow[] = []): ActivityList {
  const { run, messages: messageRows, calls: callRows, approvals: approvalRows, effects: effectRows } = record;
  const entries: ActivityList['activity'] = [
    { at: iso(run.createdAt), kind: 'run_created', id: run.id, summary: `run for profile ${run.profileId}: ${run.intent}` },
    ...messageRows.map((m) => ({ at: iso(m.createdAt), kind: 'message' as const, id: m.id, summary: `${m.trust} message: ${m.text.slice(0, 200)}` })),
    ...callRows.map((c) => ({
      at: iso(c.createdAt),
      kind: 'tool_call' as const,
      id: c.id,
      summary: `${c.tool} ${c.version}: ${c.state}${c.decisionRule ? ` (rule ${c.decisionRule}${grantOf(c) ? `, covered by grant ${grantOf(c)}` : ''})` : ''}${c.errorCode ? `, ${c.errorCode}` : ''}`,
    })),
    ...approvalRows.map((a) => ({
      at: iso(a.decidedAt ?? a.createdAt),
      kind: 'approval' as const,
      id: a.id,
      summary: `approval for ${a.toolCallId}: ${a.state}`,
    })),
    ...effectRows.map((e) => ({ at: iso(e.finishedAt ?? e.committedAt), kind: 'effect' as const, id: e.id, summary: `effect of ${e.toolCallId}: ${e.state}` })),
    ...record.signInWaits.flatMap((w) => [
      {
        at: iso(w.createdAt),
        kind: 'sign_in_wait' as const,
        id: w.id,
        summary: `sign-in required at ${w.origin} (call ${w.toolCallId}); waiting on episode ${w.episodeId}, generation ${w.generation}`,
      },
      ...(w.endedAt === null
        ? []
        : [
            {
              at: iso(w.endedAt),
              kind: 'sign_in_wait' as const,
              id: w.id,
              summary:
                w.state === 'resolved'
                  ? `sign-in verified (event ${w.resolvedBy}); run requeued for a fresh lease and read`
                  : `sign-in wait fenced: ${w.fenceReason}`,
            },
          ]),
    ]),
    ...record.ceremonyEvents.map((e) => ({
      at: iso(e.receivedAt),
      kind: 'ceremony_event' as const,
      id: e.eventId,
      summary: `ceremony ${e.ceremonyId} generation ${e.generation}: ${e.outcome} by ${e.method} verification, via ${e.via}${e.applied ? ', resolved the episode' : ''}`,
    })),
    ...suggestions.map((suggestion) => ({
      at: iso(suggestion.createdAt),
      kind: 'memory_suggestion' as const,
      id: suggestion.id,
      summary: `memory proposed to the owner${suggestion.pageDerived ? ' (read on a page)' : ''}, kept as a suggestion: ${suggestion.statement.slice(0, 200)}`,
    })),
  ];
  if ((TERMINAL_RUN_STATES as readonly string[]).includes(run.state)) {
    entries.push({
      at: iso(run.updatedAt),
      kind: 'run_ended',
      id: run.id,
      summary: `run ${run.state}${run.reportSummary ? `: ${run.reportSummary.slice(0, 200)}` : ''}`,
    });
  }
  entries.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return { run_id: run.id, activity: entries };
}

/** The grant that covered a call instead of an approval, if one did (its decision phase says so). */
function grantOf(call: { phases: Record<string, unknown> }): string | undefined {
  const decision = call.phases.decision as { grant_id?: unknown } | undefined;
  return typeof decision?.grant_id === 'string' ? decision.grant_id : undefined;
}
