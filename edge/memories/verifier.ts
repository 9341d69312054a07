import { type AnticipatedMemory, Prediction, type RefusalReason, type RefusedPrediction } from '../../shared/memories.ts';

/**
 * What the verifier knows of a memory a prediction cites: whose it is (`self`: the run's owner,
 * `other`: any other owner), its state and its statement.
 */
export interface CitedMemory {
  readonly owner: 'self' | 'other';
  readonly state: 'active' | 'retired';
  readonly statement: string;
}

/** The verifier's decision on one prediction: verified (the owner's own statement) or refused with its reason. */
export type PredictionDecision = ({ readonly verdict: 'verified' } & AnticipatedMemory) | ({ readonly verdict: 'refused' } & RefusedPrediction);

/**
 * The verifier's decision on one provider answer: verified anticipations and refusals, each in
 * the answer's order, and `decisions`, one per prediction in the answer's order (what a run records).
 */
export interface Verification {
  readonly anticipated: AnticipatedMemory[];
  readonly refused: RefusedPrediction[];
  readonly decisions: PredictionDecision[];
}

/**
 * A statement reduced to what it asserts, for comparison only: Unicode NFKC, typographic quotes
 * and dashes made plain, letters lowercased, runs of white space one space, trimmed, and trailing
 * sentence punctuation dropped. Two statements that normalise equal say the same thing.
 */
export function normaliseStatement(statement: string): string {
  return statement
    .normalize('NFKC')
    .replace(/[\u2018\u2019\u201B\u2032]/g, "'")
    .replace(/[\u201C\u201D\u201F\u2033]/g, '"')
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[\s.!;,]+$/u, '');
}

/**
 * The verifier (ADR-0168): accepts a prediction only when it fits the response schema (exactly one
 * `memory_id` and a `statement`), cites an active memory of the run's own owner, and its statement
 * is that memory's statement (normalised copy, see {@link normaliseStatement}). Everything else is
 * refused with its reason: `schema`, `unknown_memory`, `other_owner`, `retired_memory`, `compound`
 * (the statement holds the cited memory and another of the owner's memories), `not_asserted`
 * (a paraphrase, an addition or another fact), `duplicate` (a memory already brought by an
 * earlier prediction of the same answer). Pure: `cited` looks a memory up by id across all owners;
 * `ownerStatements` are the owner's active memories' statements (for naming compounds).
 */
export function verifyPredictions(
  predictions: readonly unknown[],
  cited: (memoryId: string) => CitedMemory | undefined,
  ownerStatements: readonly string[],
): Verification {
  const anticipated: AnticipatedMemory[] = [];
  const refused: RefusedPrediction[] = [];
  const decisions: PredictionDecision[] = [];
  const refuse = (refusal: RefusedPrediction) => {
    refused.push(refusal);
    decisions.push({ verdict: 'refused', ...refusal });
  };
  const brought = new Set<string>();
  const others = ownerStatements.map(normaliseStatement).filter((s) => s.length > 0);
  for (const raw of predictions) {
    const parsed = Prediction.safeParse(raw);
    if (!parsed.success) {
      refuse({ memory_id: citedIdOf(raw), statement: statementOf(raw), reason: 'schema' });
      continue;
    }
    const { memory_id, statement } = parsed.data;
    const reason = refusalOf(memory_id, statement, cited(memory_id), others, brought);
    if (reason) {
      refuse({ memory_id, statement, reason });
      continue;
    }
    brought.add(memory_id);
    // The owner's own words, not the provider's copy of them.
    const asserted = { memory_id, statement: (cited(memory_id) as CitedMemory).statement };
    anticipated.push(asserted);
    decisions.push({ verdict: 'verified', ...asserted });
  }
  return { anticipated, refused, decisions };
}

function refusalOf(
  memoryId: string,
  statement: string,
  memory: CitedMemory | undefined,
  ownerStatements: readonly string[],
  brought: ReadonlySet<string>,
): RefusalReason | undefined {
  if (!memory) return 'unknown_memory';
  if (memory.owner !== 'self') return 'other_owner';
  if (memory.state !== 'active') return 'retired_memory';
  const said = normaliseStatement(statement);
  const asserted = normaliseStatement(memory.statement);
  if (said !== asserted) {
    const joinsAnother = said.includes(asserted) && ownerStatements.some((other) => other !== asserted && said.includes(other));
    return joinsAnother ? 'compound' : 'not_asserted';
  }
  if (brought.has(memoryId)) return 'duplicate';
  return undefined;
}

/** A schema-refused prediction's cited id, when it names exactly one as a string; else null. */
function citedIdOf(raw: unknown): string | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const id = (raw as Record<string, unknown>).memory_id;
  return typeof id === 'string' ? id.slice(0, 64) : null;
}

/** A schema-refused prediction as text for the owner's record (at most 1,000 characters); never throws. */
function statementOf(raw: unknown): string {
  if (typeof raw === 'object' && raw !== null && typeof (raw as Record<string, unknown>).statement === 'string') {
    return ((raw as Record<string, unknown>).statement as string).slice(0, 1000);
  }
  return textOf(raw).slice(0, 1000);
}

/** `raw` as JSON, or its type tag when JSON cannot write it (a BigInt, a cycle) or it is undefined. */
function textOf(raw: unknown): string {
  try {
    const json = JSON.stringify(raw);
    if (json !== undefined) return json;
  } catch {
    // Not JSON: named by its type below.
  }
  return typeof raw === 'bigint' ? `${raw}n` : Object.prototype.toString.call(raw);
}
