import { and, asc, eq, inArray } from 'drizzle-orm';
import {
  ANTICIPATION_CALL_BUDGET,
  type AnticipationOffReason,
  type AnticipationProvider,
  MAX_ACTIVE_MEMORIES,
  MAX_PREDICTIONS,
  type RunAnticipationView,
} from '../../shared/memories.ts';
import { newId } from '../db/ids.ts';
import type { RunRow } from '../db/schema.ts';
import { type PolicyProfile, profileInForce } from '../policy/profile.ts';
import type { Ports } from '../ports.ts';
import { anticipate } from './anticipate.ts';
import type { RunAnticipationShown } from './anticipation-views.ts';
import { ANTICIPATION_CALL_TIMEOUT_MS } from './provider.ts';
import { anticipationPredictions, memories, memoryEvidence, runAnticipations } from './tables.ts';
import type { CitedMemory } from './verifier.ts';

/** Whose words a run's intent is: the owner's (an owner-created run, a schedule's) or an agent's. */
export type IntentAuthor = 'owner' | 'agent';

/**
 * Decides and records the anticipation of a run that was just created (issue 34, ADR-0168,
 * DESIGN.md section 19), before the create answers (the interactive `POST /v1/runs`, the cron
 * pass's scheduled runs), its reasons checked in this order: off with `agent_intent` when an
 * agent wrote the intent (the provider reads only the owner's words), `no_evidence` when no
 * evidence bundle is recorded for the run's policy profile version in force (its name, version
 * and hash) and the configured provider (`ports.anticipator`), `no_memories` when the owner has no active memory; otherwise one provider call (retried within
 * {@link ANTICIPATION_CALL_BUDGET}, each bounded by {@link ANTICIPATION_CALL_TIMEOUT_MS}) given
 * the intent and the owner's active memories only, verified (edge/memories/anticipate.ts), and
 * `provider_failed` when no call answered. The decision and every prediction, verified or refused,
 * are written in one batch. Never throws: a failure to decide or record is logged with the
 * request id and the run shows no anticipation (null), as runs made before memories did.
 * @returns what the run's view shows (verified anticipations only).
 */
export async function anticipateRunStart(ports: Ports, run: RunRow, author: IntentAuthor): Promise<RunAnticipationShown> {
  try {
    return await decideAndRecord(ports, run, author);
  } catch (error) {
    console.error(`[${ports.requestId}] run ${run.id}: deciding its anticipation failed; it has none`, error);
    return { anticipation: null, anticipated: [] };
  }
}

async function decideAndRecord(ports: Ports, run: RunRow, author: IntentAuthor): Promise<RunAnticipationShown> {
  const provider = ports.anticipator;
  const policy = await profileInForce(ports.db, run.policyProfile);
  const base = { provider: provider.id, policy_profile: policy.name, policy_version: policy.version, policy_hash: policy.hash };
  const off = (reason: AnticipationOffReason, message: string, calls = 0, costUsd = 0) =>
    record(ports, run, { ...base, state: 'off', reason, message }, [], calls, costUsd);

  // First the reason that holds whatever evidence there is: an agent's intent is never read.
  if (author !== 'owner') {
    return off(
      'agent_intent',
      "An agent wrote this run's intent; the anticipation provider reads only the owner's own words (causal blinding), so it was not asked.",
    );
  }
  const evidence = await ports.db
    .select({ id: memoryEvidence.id })
    .from(memoryEvidence)
    // The version itself, not only its hash: a new version needs fresh evidence even when its body
    // (so its hash) equals an earlier version's or another profile's (ADR-0168).
    .where(
      and(
        eq(memoryEvidence.policyProfile, policy.name),
        eq(memoryEvidence.policyVersion, policy.version),
        eq(memoryEvidence.policyHash, policy.hash),
        eq(memoryEvidence.provider, provider.id),
      ),
    )
    .get();
  if (!evidence) return off('no_evidence', noEvidenceMessage(policy, provider));
  const active = await ports.db
    .select({ id: memories.id, statement: memories.statement })
    .from(memories)
    .where(and(eq(memories.ownerId, run.ownerId), eq(memories.state, 'active')))
    .orderBy(asc(memories.createdAt), asc(memories.id))
    .limit(MAX_ACTIVE_MEMORIES)
    .all();
  if (active.length === 0) return off('no_memories', 'The owner has no active memory to anticipate from.');

  const known = new Map<string, CitedMemory>(active.map((m) => [m.id, { owner: 'self', state: 'active', statement: m.statement }]));
  const cited = (id: string) => known.get(id);
  const outcome = await anticipate(
    citingProvider(ports, provider, run.ownerId, known),
    { intent: run.intent, memories: active },
    cited,
    ANTICIPATION_CALL_BUDGET,
    { timeoutMs: ANTICIPATION_CALL_TIMEOUT_MS, sleep: (ms) => ports.clock.sleep(ms) },
  );
  if (outcome.failure !== undefined) {
    console.error(`[${ports.requestId}] run ${run.id}: the anticipation provider ${provider.id} failed ${outcome.providerCalls} call(s): ${outcome.failure}`);
    return off(
      'provider_failed',
      `The anticipation provider ${provider.id} failed all ${outcome.providerCalls} call(s) the run's budget allows; the run goes on without anticipation.`,
      outcome.providerCalls,
      outcome.costUsd,
    );
  }
  const predictions: PredictionRecord[] = outcome.decisions.map((decision) =>
    decision.verdict === 'verified'
      ? { memoryId: decision.memory_id, statement: decision.statement, verdict: 'verified', reason: null }
      : { memoryId: decision.memory_id, statement: decision.statement, verdict: 'refused', reason: decision.reason },
  );
  return record(ports, run, { ...base, state: 'ran', reason: null, message: null }, predictions, outcome.providerCalls, outcome.costUsd);
}

/** The sentence of a run whose policy version has no evidence: the profile, version, hash prefix and provider, and what an operator does. */
function noEvidenceMessage(policy: PolicyProfile, provider: AnticipationProvider): string {
  return (
    `No memory evidence is recorded for policy profile ${policy.name} version ${policy.version} (hash ${policy.hash.slice(0, 12)}) ` +
    `with provider ${provider.id}, so anticipation is off for runs under it. An operator runs \`npm run memory:evaluate\` ` +
    'under this version and publishes the passing bundle with POST /v1/memory-evidence.'
  );
}

/**
 * `provider` with an answer that is not a list of at most {@link MAX_PREDICTIONS} predictions
 * counted as a failed call (the response schema's bound; `anticipate` bounds each call by
 * {@link ANTICIPATION_CALL_TIMEOUT_MS} of the ports' clock), and, after each answer, the memories its predictions cite that `known` does not hold looked up by
 * id across every owner (another owner's as `other`, the owner's retired ones as `retired`), so
 * the verifier refuses them for what they are rather than as unknown.
 */
function citingProvider(ports: Ports, provider: AnticipationProvider, ownerId: string, known: Map<string, CitedMemory>): AnticipationProvider {
  return {
    id: provider.id,
    async anticipate(request) {
      const answer = await provider.anticipate(request);
      if (!Array.isArray(answer.predictions) || answer.predictions.length > MAX_PREDICTIONS) {
        throw new Error(`the provider answered no list of at most ${MAX_PREDICTIONS} predictions (the response schema's bound)`);
      }
      const unknown = [...new Set(answer.predictions.map(citedId).filter((id): id is string => id !== undefined && !known.has(id)))];
      if (unknown.length > 0) {
        const rows = await ports.db
          .select({ id: memories.id, ownerId: memories.ownerId, state: memories.state, statement: memories.statement })
          .from(memories)
          .where(inArray(memories.id, unknown))
          .all();
        for (const row of rows) known.set(row.id, { owner: row.ownerId === ownerId ? 'self' : 'other', state: row.state, statement: row.statement });
      }
      return answer;
    },
  };
}

/** The id a raw prediction cites, when it is a string of 1-64 characters (the schema's); else undefined. */
function citedId(raw: unknown): string | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const id = (raw as Record<string, unknown>).memory_id;
  return typeof id === 'string' && id.length >= 1 && id.length <= 64 ? id : undefined;
}

interface PredictionRecord {
  readonly memoryId: string | null;
  readonly statement: string;
  readonly verdict: 'verified' | 'refused';
  readonly reason: (typeof anticipationPredictions.$inferInsert)['reason'];
}

/** Rows of one multi-row insert: 8 columns each, within D1's 100 bound parameters a statement. */
const PREDICTION_ROWS_PER_INSERT = 12;

/** Writes the decision and its predictions (in the provider's order) in one batch; what the run's view shows. */
async function record(
  ports: Ports,
  run: RunRow,
  view: RunAnticipationView,
  predictions: readonly PredictionRecord[],
  providerCalls: number,
  costUsd: number,
): Promise<RunAnticipationShown> {
  const rows = predictions.map((p, position) => ({ id: newId('apd'), runId: run.id, ownerId: run.ownerId, position, ...p }));
  const inserts = [];
  for (let start = 0; start < rows.length; start += PREDICTION_ROWS_PER_INSERT) {
    inserts.push(ports.db.insert(anticipationPredictions).values(rows.slice(start, start + PREDICTION_ROWS_PER_INSERT)));
  }
  await ports.db.batch([
    ports.db.insert(runAnticipations).values({
      runId: run.id,
      ownerId: run.ownerId,
      state: view.state,
      reason: view.reason,
      message: view.message,
      provider: view.provider,
      policyProfile: view.policy_profile,
      policyVersion: view.policy_version,
      policyHash: view.policy_hash,
      providerCalls,
      costUsd,
      createdAt: ports.clock.now(),
    }),
    ...inserts,
  ]);
  return {
    anticipation: view,
    anticipated: predictions.filter((p) => p.verdict === 'verified').map((p) => ({ memory_id: p.memoryId as string, statement: p.statement })),
  };
}
