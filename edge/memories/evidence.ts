import { and, desc, eq } from 'drizzle-orm';
import { ANTICIPATION_CALL_BUDGET } from '../../shared/memories.ts';
import { FROZEN_CORPORA } from '../../shared/memory-corpora.ts';
import {
  type CorpusScore,
  type EvidenceBundle,
  type EvidenceGate,
  type EvidenceRecordView,
  evidenceGates,
  type MemoryCorpus,
} from '../../shared/memory-evidence.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { policyProfiles } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import { canonicalHash } from '../policy/canonical-hash.ts';
import { DEFAULT_PROFILE_BODY, DEFAULT_PROFILE_VERSION } from '../policy/profile.ts';
import type { Ports } from '../ports.ts';
import { type MemoryEvidenceRow, memoryEvidence } from './tables.ts';

/** Most evidence records `GET /v1/memory-evidence` lists: the newest. */
export const EVIDENCE_LIST_LIMIT = 100;

/** A frozen corpus's name in evidence: the SHA-256 hex of its canonical JSON (edge/policy/canonical-hash.ts). */
export function corpusHash(corpus: MemoryCorpus): Promise<string> {
  return canonicalHash(corpus);
}

/**
 * Records an evidence bundle an operator publishes (`POST /v1/memory-evidence`, ADR-0168): the
 * gates are recomputed from the bundle's per-repeat counts (its own `gates` and `passed` are never
 * read); the corpora must be the frozen ones shipped with the edge (their hashes and case counts,
 * and each repeat's needed and seeded counts the corpora's), and each repeat's counts must agree
 * with themselves and with the path runs take (see {@link inconsistencyOf}); the policy profile version must be a
 * known one (a stored version, or the built-in `default`) with that hash. From then on runs under
 * that hash with that provider are anticipated.
 * @throws DomainError('evidence_gates_failed') naming each failed gate with its figure and
 *   threshold; DomainError('evidence_mismatch') for other corpora or an unknown policy version.
 */
export async function publishEvidence(ports: Ports, principal: Principal, bundle: EvidenceBundle): Promise<EvidenceRecordView> {
  await assertFrozenCorpora(bundle);
  await assertKnownPolicyVersion(ports, bundle.policy_profile);
  const gates = evidenceGates(bundle.repeats);
  const failed = gates.filter((gate) => !gate.passed);
  if (failed.length > 0) {
    throw new DomainError(
      'evidence_gates_failed',
      `the bundle fails ${failed.length} publication gate(s): ${failed.map(gateSentence).join('; ')}; nothing was recorded`,
      Object.fromEntries(failed.map((gate) => [gate.name, String(gate.figure)])),
    );
  }
  const row: MemoryEvidenceRow = {
    id: newId('mev'),
    provider: bundle.provider,
    policyProfile: bundle.policy_profile.name,
    policyVersion: bundle.policy_profile.version,
    policyHash: bundle.policy_profile.hash,
    // The gates and totals as the edge computed them replace the bundle's own.
    bundle: { ...bundle, gates, passed: true, ...totalsOf(bundle) },
    publishedBy: principal.id,
    createdAt: ports.clock.now(),
  };
  await ports.db.insert(memoryEvidence).values(row);
  return evidenceView(row);
}

/** The recorded evidence, newest first (at most {@link EVIDENCE_LIST_LIMIT}). */
export async function listEvidence(ports: Ports): Promise<EvidenceRecordView[]> {
  const rows = await ports.db.select().from(memoryEvidence).orderBy(desc(memoryEvidence.createdAt), desc(memoryEvidence.id)).limit(EVIDENCE_LIST_LIMIT).all();
  return rows.map(evidenceView);
}

/** The provider calls and their cost (USD) summed over the bundle's repeats of both corpora. */
function totalsOf(bundle: EvidenceBundle): { provider_calls: number; cost_usd: number } {
  const scores = bundle.repeats.flatMap((repeat) => [repeat.development, repeat.holdout]);
  return {
    provider_calls: scores.reduce((sum, score) => sum + score.provider_calls, 0),
    cost_usd: scores.reduce((sum, score) => sum + score.cost_usd, 0),
  };
}

/** One gate in words: its name, figure and threshold. */
function gateSentence(gate: EvidenceGate): string {
  if (gate.name === 'boundary_failures') return `boundary_failures ${gate.figure} (at most ${gate.threshold} allowed)`;
  return `${gate.name} ${round(gate.figure)} under the threshold ${gate.threshold}`;
}

function round(figure: number): number {
  return Math.round(figure * 10_000) / 10_000;
}

/** @throws DomainError('evidence_mismatch') unless the bundle was scored on the frozen corpora. */
async function assertFrozenCorpora(bundle: EvidenceBundle): Promise<void> {
  for (const name of ['development', 'holdout'] as const) {
    const corpus = FROZEN_CORPORA[name];
    const hash = await corpusHash(corpus);
    const claimed = bundle.corpora[name];
    if (claimed.hash !== hash) {
      throw new DomainError(
        'evidence_mismatch',
        `corpora.${name}.hash ${claimed.hash.slice(0, 12)}… is not the frozen ${name} corpus (${hash.slice(0, 12)}…); evaluate with this edge's corpora`,
      );
    }
    const needed = corpus.cases.reduce((sum, c) => sum + c.needed.length, 0);
    const seeded = corpus.cases.reduce((sum, c) => sum + c.seeded.length, 0);
    const counts = [claimed.cases, ...bundle.repeats.map((repeat) => repeat[name].cases)];
    const mismatch =
      counts.some((cases) => cases !== corpus.cases.length) ||
      bundle.repeats.some((repeat) => repeat[name].needed !== needed || repeat[name].seeded !== seeded);
    if (mismatch) {
      throw new DomainError(
        'evidence_mismatch',
        `the ${name} scores do not count the frozen corpus (${corpus.cases.length} cases, ${needed} needed memories, ${seeded} seeded clauses)`,
      );
    }
    bundle.repeats.forEach((repeat, index) => {
      const inconsistency = inconsistencyOf(repeat[name]);
      if (inconsistency !== undefined) {
        throw new DomainError('evidence_mismatch', `repeat ${index + 1} of the ${name} corpus: ${inconsistency}; evaluate again with memory:evaluate`);
      }
    });
  }
}

/**
 * Why one corpus score cannot be what an evaluation counted, or undefined: more recalled than
 * needed, more represented than seeded or than recalled (a represented clause is a recalled
 * needed memory), an `unrepresented` list that is not the seeded clauses left unrepresented, or
 * provider calls outside one to {@link ANTICIPATION_CALL_BUDGET} per case (what a run makes).
 */
function inconsistencyOf(score: CorpusScore): string | undefined {
  if (score.directly_recalled > score.needed) return `${score.directly_recalled} directly recalled of ${score.needed} needed`;
  if (score.represented > score.seeded) return `${score.represented} represented of ${score.seeded} seeded clauses`;
  if (score.represented > score.directly_recalled)
    return `${score.represented} seeded clauses represented but only ${score.directly_recalled} memories recalled`;
  if (score.unrepresented.length !== score.seeded - score.represented) {
    return `${score.unrepresented.length} unrepresented clauses listed, not the ${score.seeded - score.represented} left unrepresented`;
  }
  if (score.provider_calls < score.cases || score.provider_calls > score.cases * ANTICIPATION_CALL_BUDGET) {
    return `${score.provider_calls} provider calls for ${score.cases} cases (each case makes one to ${ANTICIPATION_CALL_BUDGET})`;
  }
  return undefined;
}

/** @throws DomainError('evidence_mismatch') unless `profile` names a known version of that profile with that hash. */
async function assertKnownPolicyVersion(ports: Ports, profile: EvidenceBundle['policy_profile']): Promise<void> {
  const stored = await ports.db
    .select({ hash: policyProfiles.hash })
    .from(policyProfiles)
    .where(and(eq(policyProfiles.name, profile.name), eq(policyProfiles.version, profile.version)))
    .get();
  const builtIn = profile.name === 'default' && profile.version === DEFAULT_PROFILE_VERSION ? await canonicalHash(DEFAULT_PROFILE_BODY) : undefined;
  const hash = stored?.hash ?? builtIn;
  if (hash === undefined) throw new DomainError('evidence_mismatch', `policy profile ${profile.name} has no version ${profile.version}`);
  if (hash !== profile.hash) {
    throw new DomainError(
      'evidence_mismatch',
      `policy profile ${profile.name} version ${profile.version} has hash ${hash.slice(0, 12)}…, not ${profile.hash.slice(0, 12)}…; evaluate under the version itself`,
    );
  }
}

function evidenceView(row: MemoryEvidenceRow): EvidenceRecordView {
  const bundle = row.bundle as EvidenceBundle;
  return {
    id: row.id,
    provider: row.provider,
    policy_profile: row.policyProfile,
    policy_version: row.policyVersion,
    policy_hash: row.policyHash,
    gates: bundle.gates,
    provider_calls: bundle.provider_calls,
    cost_usd: bundle.cost_usd,
    published_by: row.publishedBy,
    created_at: iso(row.createdAt),
  };
}
