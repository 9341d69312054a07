import { ANTICIPATION_CALL_BUDGET, type AnticipationProvider, type AnticipationRequest } from '../../shared/memories.ts';
import {
  type CorpusScore,
  EVIDENCE_REPEATS,
  type EvidenceBundle,
  evidenceGates,
  type MemoryCorpus,
  type MemoryCorpusCase,
} from '../../shared/memory-evidence.ts';
import { type AnticipateOptions, type AnticipationOutcome, anticipate } from './anticipate.ts';
import { corpusHash } from './evidence.ts';
import type { CitedMemory } from './verifier.ts';

// The memory evaluation (issue 34, ADR-0168; `npm run memory:evaluate`): the frozen corpora run
// through the same `anticipate()` path runs take, scored, and made into an evidence bundle whose
// gates are recomputed from the counts by `evidenceGates`. Pure apart from the provider it is
// given: runs on Workers, Node and Deno.

/** The policy profile version an evaluation is run under: its name, version and content hash. */
export interface EvaluatedProfile {
  readonly name: string;
  readonly version: number;
  /** SHA-256 hex of the canonical JSON of the profile's body. */
  readonly hash: string;
}

/**
 * What a case gives the provider (causal blinding): its intent and its owner's active memories,
 * nothing else: never a retired memory, another owner's memory or a suggestion.
 */
export function caseRequest(corpusCase: MemoryCorpusCase): AnticipationRequest {
  return {
    intent: corpusCase.intent,
    memories: corpusCase.memories.filter((m) => m.owner === 'self' && m.state === 'active').map((m) => ({ id: m.id, statement: m.statement })),
  };
}

/**
 * The verifier's lookup for a case: every memory of the case by id, whoever's and in whatever
 * state (another owner's as `owner: "other"`, a retired one as retired). Suggestions are not
 * memories: their ids are unknown to it.
 */
function caseLookup(corpusCase: MemoryCorpusCase): (memoryId: string) => CitedMemory | undefined {
  const byId = new Map<string, CitedMemory>(corpusCase.memories.map((m) => [m.id, { owner: m.owner, state: m.state, statement: m.statement }]));
  return (memoryId) => byId.get(memoryId);
}

/** One case's outcome scored: recalled needed ids, represented seeded ids, boundary failures. */
export interface CaseScore {
  readonly recalled: string[];
  readonly represented: string[];
  readonly boundaryFailures: CorpusScore['boundary_failures'];
}

/**
 * A case's outcome scored: a needed memory is directly recalled when a verified anticipation cites
 * it; a seeded clause is represented when it is recalled; a boundary memory or suggestion a
 * verified anticipation cites is a boundary failure.
 */
function scoreCase(corpusCase: MemoryCorpusCase, outcome: AnticipationOutcome): CaseScore {
  const brought = new Set(outcome.anticipated.map((a) => a.memory_id));
  return {
    recalled: corpusCase.needed.filter((id) => brought.has(id)),
    represented: corpusCase.seeded.filter((id) => brought.has(id)),
    boundaryFailures: corpusCase.boundary
      .filter((b) => brought.has(b.memory_id))
      .map((b) => ({ case_id: corpusCase.id, memory_id: b.memory_id, kind: b.kind })),
  };
}

/** Hears a case whose every provider call within the budget failed, with the last failure's message. */
export type ProviderFailureListener = (caseId: string, message: string) => void;

/**
 * One repeat of one corpus: every case's request sent through {@link anticipate} with `provider`
 * and the per-run call budget, each call bounded in time as at a run's start (`call`, see
 * {@link AnticipateOptions}), scored and summed into a {@link CorpusScore}. `onFailure` hears
 * each case the provider failed on (scored as nothing brought).
 */
export async function evaluateCorpus(
  provider: AnticipationProvider,
  corpus: MemoryCorpus,
  budget = ANTICIPATION_CALL_BUDGET,
  onFailure?: ProviderFailureListener,
  call: AnticipateOptions = {},
): Promise<CorpusScore> {
  const score: CorpusScore = {
    cases: corpus.cases.length,
    needed: 0,
    directly_recalled: 0,
    seeded: 0,
    represented: 0,
    unrepresented: [],
    boundary_failures: [],
    refused: 0,
    provider_calls: 0,
    cost_usd: 0,
  };
  for (const corpusCase of corpus.cases) {
    const outcome = await anticipate(provider, caseRequest(corpusCase), caseLookup(corpusCase), budget, call);
    if (outcome.failure !== undefined) onFailure?.(corpusCase.id, outcome.failure);
    const scored = scoreCase(corpusCase, outcome);
    score.needed += corpusCase.needed.length;
    score.directly_recalled += scored.recalled.length;
    score.seeded += corpusCase.seeded.length;
    score.represented += scored.represented.length;
    score.unrepresented.push(...corpusCase.seeded.filter((id) => !scored.represented.includes(id)).map((id) => `${corpusCase.id}:${id}`));
    score.boundary_failures.push(...scored.boundaryFailures);
    score.refused += outcome.refused.length;
    score.provider_calls += outcome.providerCalls;
    score.cost_usd += outcome.costUsd;
  }
  return score;
}

/** The corpora an evaluation runs (normally `FROZEN_CORPORA`). */
export interface EvaluationCorpora {
  readonly development: MemoryCorpus;
  readonly holdout: MemoryCorpus;
}

/**
 * The evaluation: {@link EVIDENCE_REPEATS} repeats of both corpora with `provider`, made into an
 * evidence bundle under `profile`: the corpora's hashes (SHA-256 of their canonical JSON), the
 * repeats, the gates recomputed by `evidenceGates`, the totals and the instant it finished
 * (`now()`, ISO-8601). `onRepeat` hears each repeat as it ends (for progress output), `onFailure`
 * each case whose provider calls all failed.
 */
export async function evaluateProvider(
  provider: AnticipationProvider,
  corpora: EvaluationCorpora,
  profile: EvaluatedProfile,
  options: {
    readonly now?: () => Date;
    readonly onRepeat?: (index: number, repeat: EvidenceBundle['repeats'][number]) => void;
    readonly onFailure?: ProviderFailureListener;
  } = {},
): Promise<EvidenceBundle> {
  const repeats: EvidenceBundle['repeats'] = [];
  for (let index = 0; index < EVIDENCE_REPEATS; index += 1) {
    const repeat = {
      development: await evaluateCorpus(provider, corpora.development, ANTICIPATION_CALL_BUDGET, options.onFailure),
      holdout: await evaluateCorpus(provider, corpora.holdout, ANTICIPATION_CALL_BUDGET, options.onFailure),
    };
    repeats.push(repeat);
    options.onRepeat?.(index, repeat);
  }
  return evidenceBundleOf(provider.id, profile, corpora, repeats, (options.now ?? (() => new Date()))());
}

/**
 * The evidence bundle of `repeats` scored with `provider` (its id) under `profile` on `corpora`:
 * the corpora's hashes and case counts, the gates recomputed by `evidenceGates`, whether all
 * passed, the provider calls and cost summed, and `finishedAt` as `created_at` (ISO-8601).
 */
export async function evidenceBundleOf(
  provider: string,
  profile: EvaluatedProfile,
  corpora: EvaluationCorpora,
  repeats: EvidenceBundle['repeats'],
  finishedAt: Date,
): Promise<EvidenceBundle> {
  const gates = evidenceGates(repeats);
  return {
    format: 1,
    provider,
    policy_profile: { name: profile.name, version: profile.version, hash: profile.hash },
    corpora: {
      development: { hash: await corpusHash(corpora.development), cases: corpora.development.cases.length },
      holdout: { hash: await corpusHash(corpora.holdout), cases: corpora.holdout.cases.length },
    },
    repeats,
    gates,
    passed: gates.every((gate) => gate.passed),
    provider_calls: repeats.reduce((sum, r) => sum + r.development.provider_calls + r.holdout.provider_calls, 0),
    cost_usd: repeats.reduce((sum, r) => sum + r.development.cost_usd + r.holdout.cost_usd, 0),
    created_at: finishedAt.toISOString(),
  };
}
