import { z } from 'zod';

// Owner memories and their anticipation (issue 34, ADR-0168 "memory evidence", DESIGN.md section
// 19): the owner's statements, the suggestions agents propose, what an anticipation provider is
// given and may answer, what the verifier decided, and what a run shows. One definition each: the
// edge's routes, the console, the providers and the evaluation (`npm run memory:evaluate`) use them.

/** Most characters one memory's statement holds. */
export const MAX_MEMORY_STATEMENT_CHARS = 500;
/** Most active memories one owner keeps (a create past it is `quota_exceeded`). */
export const MAX_ACTIVE_MEMORIES = 200;
/** Most memories one run report may propose. */
export const MAX_REPORT_MEMORIES = 8;
/** Most suggestions an owner has pending; a report past it keeps the ones that fit and says so. */
export const MAX_PENDING_SUGGESTIONS = 50;
/** Most predictions one provider answer may hold (the response schema's bound). */
export const MAX_PREDICTIONS = 32;
/** Provider calls one run may make for its anticipation (ADR-0168: the call budget). */
export const ANTICIPATION_CALL_BUDGET = 2;

/**
 * A statement as the owner wrote or accepted it: one to 500 characters once trimmed, no control,
 * format (bidi, zero-width) or unassigned characters, which could hide or reverse what it says.
 */
export const MemoryStatement = z
  .string()
  .trim()
  .min(1, 'a statement says something')
  .max(MAX_MEMORY_STATEMENT_CHARS, `a statement is at most ${MAX_MEMORY_STATEMENT_CHARS} characters`)
  .refine((text) => !/[\p{Cc}\p{Cf}\p{Cn}\p{Co}]/u.test(text.replace(/\n/g, ' ')), 'a statement holds no control, format or unassigned characters');

/** Where a memory came from: the owner wrote it, or the owner accepted an agent's suggestion. */
export const MemorySource = z.enum(['owner', 'suggestion']);
export type MemorySource = z.infer<typeof MemorySource>;

/** A memory is `active` (anticipation may bring it) or `retired` (kept, never brought again). */
export const MemoryState = z.enum(['active', 'retired']);
export type MemoryState = z.infer<typeof MemoryState>;

/**
 * One memory as the owner sees it (`GET /v1/memories`). `revision` counts edits from 1: an edit
 * or retirement that names a revision applies only to that revision (`stale_revision` else).
 * Instants are ISO-8601; `retired_at` is null while active.
 */
export const MemoryView = z.strictObject({
  id: z.string(),
  statement: z.string(),
  source: MemorySource,
  state: MemoryState,
  revision: z.int().min(1),
  /** For a memory accepted from a suggestion: that suggestion's id. */
  suggestion_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  retired_at: z.string().nullable(),
});
export type MemoryView = z.infer<typeof MemoryView>;

/** `POST /v1/memories` (the owner only): a new active memory in the owner's own words. */
export const CreateMemoryBody = z
  .strictObject({ statement: MemoryStatement })
  .meta({ examples: [{ statement: 'My frequent-flyer number is in the travel folder, not in the browser.' }] });
export type CreateMemoryBody = z.infer<typeof CreateMemoryBody>;

/**
 * `PATCH /v1/memories/{id}` (the owner only): a new statement, or `state: "retired"` to retire it
 * (a retired memory is final: it is neither edited nor made active again; write a new one).
 * `revision`, when given, must be the memory's current revision.
 */
export const UpdateMemoryBody = z
  .strictObject({
    statement: MemoryStatement.optional(),
    state: z.literal('retired').optional(),
    revision: z.int().min(1).optional(),
  })
  .refine((body) => (body.statement === undefined) !== (body.state === undefined), 'give either a new statement or state "retired", not both, not neither')
  .meta({ examples: [{ statement: 'I prefer aisle seats on flights over two hours.', revision: 1 }] });
export type UpdateMemoryBody = z.infer<typeof UpdateMemoryBody>;

/** `GET /v1/memories?state=`: the owner's memories, newest first; all states unless one is named. */
export const MemoryListQuery = z.strictObject({ state: MemoryState.optional() });
export const MemoryList = z.strictObject({ memories: z.array(MemoryView) });
export type MemoryList = z.infer<typeof MemoryList>;

/**
 * A memory an agent proposes in its run report (`run_report` / `POST /v1/runs/{id}/report`
 * `memories`). `page_derived` (required: the agent says where it came from every time) is true
 * when the agent read it on a page rather than from the owner: it is shown to the owner as such.
 * A proposal is only ever a suggestion the owner accepts or rejects.
 */
export const ProposedMemory = z.strictObject({
  statement: MemoryStatement,
  page_derived: z.boolean(),
});
export type ProposedMemory = z.infer<typeof ProposedMemory>;

/** A suggestion's state: waiting for the owner, or the owner's decision. */
export const SuggestionState = z.enum(['pending', 'accepted', 'rejected']);
export type SuggestionState = z.infer<typeof SuggestionState>;

/** One suggestion as the owner sees it (`GET /v1/memory-suggestions`, the console). */
export const SuggestionView = z.strictObject({
  id: z.string(),
  run_id: z.string(),
  statement: z.string(),
  page_derived: z.boolean(),
  /** The agent principal that proposed it. */
  proposed_by: z.string(),
  state: SuggestionState,
  /** The memory the owner's acceptance made; null otherwise. */
  memory_id: z.string().nullable(),
  created_at: z.string(),
  decided_at: z.string().nullable(),
});
export type SuggestionView = z.infer<typeof SuggestionView>;

/** `GET /v1/memory-suggestions?state=`: the owner's suggestions, newest first; all states unless one is named. */
export const SuggestionListQuery = z.strictObject({ state: SuggestionState.optional() });
export const SuggestionList = z.strictObject({ suggestions: z.array(SuggestionView) });
export type SuggestionList = z.infer<typeof SuggestionList>;

/**
 * `POST /v1/memory-suggestions/{id}/decision` (the owner only): accept (optionally in the owner's
 * own words, which then become the memory's statement) or reject. A decided suggestion is final
 * (`already_decided`).
 */
export const SuggestionDecisionBody = z
  .strictObject({
    decision: z.enum(['accept', 'reject']),
    statement: MemoryStatement.optional(),
  })
  .meta({ examples: [{ decision: 'accept', statement: 'I keep receipts in the Finance folder.' }] });
export type SuggestionDecisionBody = z.infer<typeof SuggestionDecisionBody>;

// --- Anticipation: the provider's port ---------------------------------------------------------

/**
 * What an anticipation provider is given, and nothing else (causal blinding): the run's intent in
 * the owner's own words and the owner's active memories. No page content, no agent text, no
 * other owner's memory, no retired memory, no suggestion.
 */
export const AnticipationRequest = z.strictObject({
  intent: z.string().min(1).max(10_000),
  memories: z.array(z.strictObject({ id: z.string(), statement: z.string() })).max(MAX_ACTIVE_MEMORIES),
});
export type AnticipationRequest = z.infer<typeof AnticipationRequest>;

/**
 * One prediction: exactly one cited memory and that memory's statement, copied (ADR-0168: one
 * referenced memory per prediction, enforced by the response schema). A prediction citing two
 * memories does not fit it; independent facts are independent predictions.
 */
export const Prediction = z.strictObject({
  memory_id: z.string().min(1).max(64),
  statement: z
    .string()
    .min(1)
    .max(MAX_MEMORY_STATEMENT_CHARS * 2),
});
export type Prediction = z.infer<typeof Prediction>;

/** A provider's answer: the response schema given to a model as structured output. */
export const AnticipationResponse = z.strictObject({
  predictions: z.array(Prediction).max(MAX_PREDICTIONS),
});
export type AnticipationResponse = z.infer<typeof AnticipationResponse>;

/**
 * What a provider returned for one call, before any check: `predictions` as given (each is
 * checked against {@link Prediction} one by one, so one bad prediction refuses only itself),
 * and the call's cost in US dollars (0 for the embedded provider).
 */
export interface ProviderAnswer {
  readonly predictions: readonly unknown[];
  readonly costUsd: number;
}

/**
 * The anticipation port (DESIGN.md section 19): an embedded lexical anticipator by default, a
 * model vendor's SDK when its API key is set. `id` names the provider and its model, e.g.
 * `embedded-lexical/1` or `anthropic/claude-sonnet-4-5`; evidence is recorded per provider id.
 * `anticipate` makes exactly one provider call; it throws when the provider fails or answers
 * something that is not `{predictions: [...]}`.
 */
export interface AnticipationProvider {
  readonly id: string;
  anticipate(request: AnticipationRequest): Promise<ProviderAnswer>;
}

/** Why the verifier refused a prediction (shown to the owner only, never to the agent). */
export const RefusalReason = z.enum([
  /** It does not fit the response schema (e.g. two memory ids, no id, extra fields). */
  'schema',
  /** It cites no memory of this owner that exists. */
  'unknown_memory',
  /** It cites a retired memory. */
  'retired_memory',
  /** It cites another owner's memory. */
  'other_owner',
  /** Its statement joins the cited memory with another memory's statement. */
  'compound',
  /** Its statement is not what the cited memory asserts (a paraphrase, an addition, another fact). */
  'not_asserted',
  /** It cites a memory an earlier prediction of the same answer already brought. */
  'duplicate',
]);
export type RefusalReason = z.infer<typeof RefusalReason>;

/** A verified anticipation: the owner's own statement and the memory it is. */
export const AnticipatedMemory = z.strictObject({ memory_id: z.string(), statement: z.string() });
export type AnticipatedMemory = z.infer<typeof AnticipatedMemory>;

/** A refused prediction as recorded for the owner: what was said, what it cited, and why. */
export const RefusedPrediction = z.strictObject({
  memory_id: z.string().nullable(),
  statement: z.string(),
  reason: RefusalReason,
});
export type RefusedPrediction = z.infer<typeof RefusedPrediction>;

/**
 * Why a run has no anticipation (or only part of it): `no_evidence` (no passing evidence bundle for
 * the run's policy profile version and the configured provider), `agent_intent` (the intent is an
 * agent's text, which the provider never reads), `no_memories` (the owner has no active memory),
 * `provider_failed` (every call within the budget failed), `budget_exhausted`.
 */
export const AnticipationOffReason = z.enum(['no_evidence', 'agent_intent', 'no_memories', 'provider_failed', 'budget_exhausted']);
export type AnticipationOffReason = z.infer<typeof AnticipationOffReason>;

/**
 * A run's anticipation as the run shows it (`RunView.anticipation`): `ran` when the provider was
 * asked and its verified predictions are `RunView.anticipated`, `off` when it was not asked (or
 * failed) with the reason code and a sentence; `provider` and the policy profile version and hash
 * it was decided under. Null on runs made before memories existed.
 */
export const RunAnticipationView = z.strictObject({
  state: z.enum(['ran', 'off']),
  reason: AnticipationOffReason.nullable(),
  message: z.string().nullable(),
  provider: z.string(),
  policy_profile: z.string(),
  policy_version: z.int(),
  policy_hash: z.string(),
});
export type RunAnticipationView = z.infer<typeof RunAnticipationView>;

/**
 * The owner's full record of a run's anticipation (`GET /v1/runs/{id}/anticipation`, the owner
 * only; the console): the run's view plus every refused prediction with its reason and the
 * provider calls made.
 */
export const AnticipationRecordView = z.strictObject({
  run_id: z.string(),
  anticipation: RunAnticipationView,
  anticipated: z.array(AnticipatedMemory),
  refused: z.array(RefusedPrediction),
  provider_calls: z.int().min(0),
  created_at: z.string(),
});
export type AnticipationRecordView = z.infer<typeof AnticipationRecordView>;
