import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { AnticipatedMemory, AnticipationRecordView, RunAnticipationView } from '../../shared/memories.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { anticipationPredictions, type RunAnticipationRow, runAnticipations } from './tables.ts';

/**
 * What a run's view shows of its anticipation (`RunView.anticipation` and `RunView.anticipated`):
 * the decision, null for a run made before memories existed, and the verified anticipations only.
 */
export interface RunAnticipationShown {
  readonly anticipation: RunAnticipationView | null;
  readonly anticipated: AnticipatedMemory[];
}

/** What a run without a recorded anticipation shows. */
export const NO_ANTICIPATION: RunAnticipationShown = { anticipation: null, anticipated: [] };

/**
 * The anticipations of the runs `runIds` (at most 100: one page of `GET /v1/runs`), by run id, in
 * one statement (the decisions joined with their verified predictions); a run without a record
 * is absent (see {@link NO_ANTICIPATION}). Nothing is read for no ids.
 */
export async function anticipationsOf(ports: Ports, runIds: readonly string[]): Promise<Map<string, RunAnticipationShown>> {
  const ids = [...new Set(runIds)];
  if (ids.length === 0) return new Map();
  // The verdict is a literal: a page's 100 ids are all the bound parameters D1 allows.
  const rows = await ports.db
    .select({ decision: runAnticipations, memoryId: anticipationPredictions.memoryId, statement: anticipationPredictions.statement })
    .from(runAnticipations)
    .leftJoin(anticipationPredictions, and(eq(anticipationPredictions.runId, runAnticipations.runId), sql`${anticipationPredictions.verdict} = 'verified'`))
    .where(inArray(runAnticipations.runId, ids))
    .orderBy(asc(runAnticipations.runId), asc(anticipationPredictions.position))
    .all();
  const shown = new Map<string, { anticipation: RunAnticipationView; anticipated: AnticipatedMemory[] }>();
  for (const row of rows) {
    let entry = shown.get(row.decision.runId);
    if (entry === undefined) {
      entry = { anticipation: decisionView(row.decision), anticipated: [] };
      shown.set(row.decision.runId, entry);
    }
    if (row.memoryId !== null && row.statement !== null) entry.anticipated.push({ memory_id: row.memoryId, statement: row.statement });
  }
  return shown;
}

/** The anticipation of one run (one statement); {@link NO_ANTICIPATION} when none is recorded. */
export async function anticipationOfRun(ports: Ports, runId: string): Promise<RunAnticipationShown> {
  return (await anticipationsOf(ports, [runId])).get(runId) ?? NO_ANTICIPATION;
}

/**
 * The owner's full record of run `runId`'s anticipation (`GET /v1/runs/{id}/anticipation`): the
 * decision, the verified anticipations, every refused prediction with its reason, the provider
 * calls. The caller has checked the run is the caller's owner's.
 * @throws DomainError('not_found') for a run whose anticipation was never decided (made before memories existed).
 */
export async function anticipationRecordOf(ports: Ports, runId: string): Promise<AnticipationRecordView> {
  const [decisions, predictions] = await ports.db.batch([
    ports.db.select().from(runAnticipations).where(eq(runAnticipations.runId, runId)),
    ports.db.select().from(anticipationPredictions).where(eq(anticipationPredictions.runId, runId)).orderBy(asc(anticipationPredictions.position)),
  ]);
  const decision = decisions[0];
  if (decision === undefined) throw new DomainError('not_found', `run ${runId} has no anticipation record: it was made before memories existed`);
  return {
    run_id: runId,
    anticipation: decisionView(decision),
    anticipated: predictions.filter((p) => p.verdict === 'verified').map((p) => ({ memory_id: p.memoryId ?? '', statement: p.statement })),
    refused: predictions.filter((p) => p.verdict === 'refused').map((p) => ({ memory_id: p.memoryId, statement: p.statement, reason: p.reason ?? 'schema' })),
    provider_calls: decision.providerCalls,
    created_at: iso(decision.createdAt),
  };
}

function decisionView(row: RunAnticipationRow): RunAnticipationView {
  return {
    state: row.state,
    reason: row.reason,
    message: row.message,
    provider: row.provider,
    policy_profile: row.policyProfile,
    policy_version: row.policyVersion,
    policy_hash: row.policyHash,
  };
}
