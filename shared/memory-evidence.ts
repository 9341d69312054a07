import { z } from 'zod';

// Memory evidence (issue 34, ADR-0168): the frozen corpora anticipation is scored on, the
// evidence bundle `npm run memory:evaluate` writes, and the publication gates. The edge recomputes
// the gates from a bundle's per-repeat counts before it records one (the operator's
// `POST /v1/memory-evidence`); anticipation runs under a policy profile version only with a passing
// bundle for that version's hash and the configured provider.

/** Repeats one evaluation makes of each corpus. */
export const EVIDENCE_REPEATS = 3;
/** Publication gates (ADR-0168): direct recall floors per corpus and boundary failures allowed. */
export const EVIDENCE_GATES = { holdoutDirectRecall: 0.95, developmentDirectRecall: 0.95, boundaryFailures: 0 } as const;

/**
 * Why a boundary memory must not be brought: it is retired, another owner's, unrelated to the
 * intent, or a page-derived suggestion the owner never accepted.
 */
export const BoundaryKind = z.enum(['retired', 'other_owner', 'unrelated', 'page_derived_suggestion']);
export type BoundaryKind = z.infer<typeof BoundaryKind>;

/**
 * One case of a corpus: the memories as stored (the case's owner's, `owner: "self"`, and another
 * owner's, `owner: "other"`, each active or retired), the suggestions pending for the owner (never
 * memories), the run's intent in the owner's words, the memories a run with that intent needs
 * (`needed`), the clauses seeded into the case that must be represented in every repeat (`seeded`,
 * a subset of `needed`), and the boundary memories or suggestions that must never be brought.
 */
export const MemoryCorpusCase = z
  .strictObject({
    id: z.string().min(1),
    intent: z.string().min(1),
    memories: z.array(
      z.strictObject({ id: z.string().min(1), statement: z.string().min(1), owner: z.enum(['self', 'other']), state: z.enum(['active', 'retired']) }),
    ),
    suggestions: z.array(z.strictObject({ id: z.string().min(1), statement: z.string().min(1), page_derived: z.boolean() })),
    needed: z.array(z.string()),
    seeded: z.array(z.string()),
    boundary: z.array(z.strictObject({ memory_id: z.string(), kind: BoundaryKind })),
  })
  .refine((c) => c.seeded.every((id) => c.needed.includes(id)), 'every seeded clause is a needed memory')
  .refine(
    (c) => c.needed.every((id) => c.memories.some((m) => m.id === id && m.owner === 'self' && m.state === 'active')),
    'needed memories are the owner’s active ones',
  )
  .refine((c) => c.boundary.every((b) => !c.needed.includes(b.memory_id)), 'a boundary memory is never needed');
export type MemoryCorpusCase = z.infer<typeof MemoryCorpusCase>;

/** A frozen corpus: `development` (what the anticipator may be tuned on) or `holdout` (never). */
export const MemoryCorpus = z.strictObject({
  name: z.enum(['development', 'holdout']),
  cases: z.array(MemoryCorpusCase).min(1),
});
export type MemoryCorpus = z.infer<typeof MemoryCorpus>;

/** A boundary memory a repeat brought as a verified anticipation: one boundary failure. */
export const BoundaryFailure = z.strictObject({ case_id: z.string(), memory_id: z.string(), kind: BoundaryKind });

/**
 * One corpus scored in one repeat: needed memories and how many were directly recalled (a verified
 * anticipation citing exactly that memory), seeded clauses and how many were represented, the
 * boundary failures, refused predictions, provider calls and their cost (USD).
 */
export const CorpusScore = z.strictObject({
  cases: z.int().min(1),
  needed: z.int().min(0),
  directly_recalled: z.int().min(0),
  seeded: z.int().min(0),
  represented: z.int().min(0),
  /** Seeded clauses not represented, as `case_id:memory_id`. */
  unrepresented: z.array(z.string()),
  boundary_failures: z.array(BoundaryFailure),
  refused: z.int().min(0),
  provider_calls: z.int().min(0),
  cost_usd: z.number().min(0),
});
export type CorpusScore = z.infer<typeof CorpusScore>;

/** One publication gate: its name, the figure measured, the threshold and whether it passed. */
export const EvidenceGate = z.strictObject({
  name: z.enum(['holdout_direct_recall', 'development_direct_recall', 'seeded_clauses_represented', 'boundary_failures']),
  figure: z.number(),
  threshold: z.number(),
  passed: z.boolean(),
});
export type EvidenceGate = z.infer<typeof EvidenceGate>;

/**
 * The evidence bundle (`npm run memory:evaluate`, published with `POST /v1/memory-evidence`): the
 * provider id, the policy profile version and hash it was run under, the corpora's SHA-256 hashes
 * (of their canonical JSON), three repeats of both corpora, the gates and the totals.
 */
export const EvidenceBundle = z.strictObject({
  format: z.literal(1),
  provider: z.string().min(1).max(200),
  policy_profile: z.strictObject({ name: z.string().min(1).max(64), version: z.int().min(1), hash: z.string().regex(/^[0-9a-f]{64}$/) }),
  corpora: z.strictObject({
    development: z.strictObject({ hash: z.string().regex(/^[0-9a-f]{64}$/), cases: z.int().min(1) }),
    holdout: z.strictObject({ hash: z.string().regex(/^[0-9a-f]{64}$/), cases: z.int().min(1) }),
  }),
  repeats: z.array(z.strictObject({ development: CorpusScore, holdout: CorpusScore })).length(EVIDENCE_REPEATS),
  gates: z.array(EvidenceGate),
  passed: z.boolean(),
  provider_calls: z.int().min(0),
  cost_usd: z.number().min(0),
  /** ISO-8601 instant the evaluation finished. */
  created_at: z.string(),
});
export type EvidenceBundle = z.infer<typeof EvidenceBundle>;

/**
 * The publication gates of a bundle's repeats, recomputed from their counts (never read from the
 * bundle's own `gates`): direct recall per corpus pooled over the repeats (recalled / needed; 1
 * when nothing is needed), every seeded clause represented in every repeat, and the boundary
 * failures summed.
 */
export function evidenceGates(repeats: EvidenceBundle['repeats']): EvidenceGate[] {
  const recall = (corpus: 'development' | 'holdout') => {
    const needed = repeats.reduce((sum, r) => sum + r[corpus].needed, 0);
    const recalled = repeats.reduce((sum, r) => sum + Math.min(r[corpus].directly_recalled, r[corpus].needed), 0);
    return needed === 0 ? 1 : recalled / needed;
  };
  const seeded = repeats.reduce((sum, r) => sum + r.development.seeded + r.holdout.seeded, 0);
  const represented = repeats.reduce(
    (sum, r) => sum + Math.min(r.development.represented, r.development.seeded) + Math.min(r.holdout.represented, r.holdout.seeded),
    0,
  );
  const boundary = repeats.reduce((sum, r) => sum + r.development.boundary_failures.length + r.holdout.boundary_failures.length, 0);
  const holdout = recall('holdout');
  const development = recall('development');
  const representedShare = seeded === 0 ? 1 : represented / seeded;
  return [
    { name: 'holdout_direct_recall', figure: holdout, threshold: EVIDENCE_GATES.holdoutDirectRecall, passed: holdout >= EVIDENCE_GATES.holdoutDirectRecall },
    {
      name: 'development_direct_recall',
      figure: development,
      threshold: EVIDENCE_GATES.developmentDirectRecall,
      passed: development >= EVIDENCE_GATES.developmentDirectRecall,
    },
    { name: 'seeded_clauses_represented', figure: representedShare, threshold: 1, passed: representedShare === 1 && repeats.length === EVIDENCE_REPEATS },
    { name: 'boundary_failures', figure: boundary, threshold: EVIDENCE_GATES.boundaryFailures, passed: boundary <= EVIDENCE_GATES.boundaryFailures },
  ];
}

/** `POST /v1/memory-evidence` answer and `GET /v1/memory-evidence` rows: a recorded bundle. */
export const EvidenceRecordView = z.strictObject({
  id: z.string(),
  provider: z.string(),
  policy_profile: z.string(),
  policy_version: z.int(),
  policy_hash: z.string(),
  gates: z.array(EvidenceGate),
  provider_calls: z.int(),
  cost_usd: z.number(),
  published_by: z.string(),
  created_at: z.string(),
});
export type EvidenceRecordView = z.infer<typeof EvidenceRecordView>;

export const EvidenceRecordList = z.strictObject({ evidence: z.array(EvidenceRecordView) });
export type EvidenceRecordList = z.infer<typeof EvidenceRecordList>;
