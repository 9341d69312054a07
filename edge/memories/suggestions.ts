import { and, desc, eq, type SQL, sql } from 'drizzle-orm';
import { MAX_PENDING_SUGGESTIONS, type ProposedMemory, type SuggestionDecisionBody, type SuggestionState } from '../../shared/memories.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { selectedRow } from '../db/insert-select.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type MemoryRow, type MemorySuggestionRow, memories, memorySuggestions, type RunRow, runs } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Database, Ports } from '../ports.ts';
import { activeMemoryCap, ownerIdOf, roomForActiveMemory } from './memories.ts';

// What agents propose at the end of a run (issue 34): suggestions the owner accepts or rejects,
// never an active memory by themselves. A decision is final and conditional on `pending`.

/** SQL true while `ownerId` has fewer than {@link MAX_PENDING_SUGGESTIONS} pending suggestions. */
function roomForSuggestion(ownerId: string): SQL {
  return sql`(select count(*) from memory_suggestions where memory_suggestions.owner_id = ${ownerId} and memory_suggestions.state = 'pending') < ${MAX_PENDING_SUGGESTIONS}`;
}

/**
 * The statements that record a run report's proposed memories as `pending` suggestions, for the
 * report's batch, placed before the report's own update: each inserts its row only while
 * `reportWins` (SQL over `runs`, the same condition the report's update has) holds for `run` and
 * the owner has fewer than {@link MAX_PENDING_SUGGESTIONS} pending suggestions. In the batch,
 * nothing runs in between, so suggestions are kept exactly when the report ends the run, and
 * those past the bound are left out in order (the report still succeeds).
 * @returns the statements (one per proposal, in order) and the ids they would write.
 */
export function suggestionStatements(db: Database, principal: Principal, run: RunRow, proposals: readonly ProposedMemory[], reportWins: SQL, now: number) {
  return proposals.map((proposal) => {
    const row: MemorySuggestionRow = {
      id: newId('sug'),
      ownerId: run.ownerId,
      runId: run.id,
      proposedBy: principal.id,
      statement: proposal.statement,
      pageDerived: proposal.page_derived,
      state: 'pending',
      memoryId: null,
      createdAt: now,
      decidedAt: null,
    };
    return db.insert(memorySuggestions).select((qb) =>
      qb
        .select(selectedRow(memorySuggestions, row))
        .from(runs)
        .where(and(eq(runs.id, run.id), reportWins, roomForSuggestion(run.ownerId)))
        .getSQL(),
    );
  });
}

/** The owner's suggestions, newest first; only those in `state` when given. */
export async function listSuggestions(ports: Ports, principal: Principal, state?: SuggestionState): Promise<MemorySuggestionRow[]> {
  return ports.db
    .select()
    .from(memorySuggestions)
    .where(and(eq(memorySuggestions.ownerId, ownerIdOf(principal)), state === undefined ? undefined : eq(memorySuggestions.state, state)))
    .orderBy(desc(memorySuggestions.createdAt), sql`memory_suggestions.rowid desc`);
}

/** The suggestions recorded from run `runId`'s report, in the order proposed (the rows' insertion order). */
export async function suggestionsOfRun(ports: Ports, runId: string): Promise<MemorySuggestionRow[]> {
  return ports.db
    .select()
    .from(memorySuggestions)
    .where(eq(memorySuggestions.runId, runId))
    .orderBy(memorySuggestions.createdAt, sql`memory_suggestions.rowid`);
}

/**
 * The owner's suggestion `id`.
 * @throws DomainError('not_found') for no suggestion, or another owner's.
 */
export async function loadSuggestion(ports: Ports, principal: Principal, id: string): Promise<MemorySuggestionRow> {
  const row = await ports.db
    .select()
    .from(memorySuggestions)
    .where(and(eq(memorySuggestions.id, id), eq(memorySuggestions.ownerId, ownerIdOf(principal))))
    .get();
  if (row === undefined) throw new DomainError('not_found', `no memory suggestion ${id}`);
  return row;
}

/** What the owner's decision made: the decided suggestion, and the memory an acceptance wrote. */
export interface SuggestionDecision {
  readonly suggestion: MemorySuggestionRow;
  readonly memory: MemoryRow | undefined;
}

/**
 * Decides a pending suggestion. `reject` is one conditional update. `accept` is one batch: the
 * suggestion becomes `accepted` (only while pending and while the owner has room for another
 * active memory), then the memory is inserted only if that update named it, with source
 * `suggestion`, the suggestion's id, and the owner's own words when `statement` is given. Of
 * racing decisions one wins; a decision is final.
 * @throws DomainError('invalid_request') for a statement with a rejection;
 *   DomainError('not_found') for no suggestion of this owner;
 *   DomainError('already_decided') when it is no longer pending;
 *   DomainError('quota_exceeded') when an acceptance would pass the active-memory cap.
 */
export async function decideSuggestion(ports: Ports, principal: Principal, id: string, body: SuggestionDecisionBody): Promise<SuggestionDecision> {
  if (body.decision === 'reject' && body.statement !== undefined) {
    throw new DomainError('invalid_request', 'statement: only an acceptance takes the owner\u2019s own words');
  }
  const current = await loadSuggestion(ports, principal, id);
  assertPending(current);
  const now = ports.clock.now();
  const pendingOne = and(eq(memorySuggestions.id, current.id), eq(memorySuggestions.ownerId, current.ownerId), eq(memorySuggestions.state, 'pending'));
  if (body.decision === 'reject') {
    const rejected = await ports.db.update(memorySuggestions).set({ state: 'rejected', decidedAt: now }).where(pendingOne).run();
    if (rowsChanged(rejected) !== 1) {
      await refusalOfLostDecision(ports, principal, id);
      throw new DomainError('already_decided', 'the suggestion was decided concurrently');
    }
    return { suggestion: { ...current, state: 'rejected', decidedAt: now }, memory: undefined };
  }
  const memory: MemoryRow = {
    id: newId('mem'),
    ownerId: current.ownerId,
    statement: body.statement ?? current.statement,
    source: 'suggestion',
    suggestionId: current.id,
    state: 'active',
    revision: 1,
    createdAt: now,
    updatedAt: now,
    retiredAt: null,
  };
  const [accepted] = await ports.db.batch([
    ports.db
      .update(memorySuggestions)
      .set({ state: 'accepted', memoryId: memory.id, decidedAt: now })
      .where(and(pendingOne, roomForActiveMemory(current.ownerId))),
    ports.db.insert(memories).select((qb) =>
      qb
        .select(selectedRow(memories, memory))
        .from(memorySuggestions)
        .where(and(eq(memorySuggestions.id, current.id), eq(memorySuggestions.state, 'accepted'), eq(memorySuggestions.memoryId, memory.id)))
        .getSQL(),
    ),
  ]);
  if (rowsChanged(accepted) !== 1) {
    await refusalOfLostDecision(ports, principal, id);
    throw activeMemoryCap();
  }
  return { suggestion: { ...current, state: 'accepted', memoryId: memory.id, decidedAt: now }, memory };
}

/** @throws DomainError('already_decided') for a suggestion no longer pending. */
function assertPending(row: MemorySuggestionRow): void {
  if (row.state !== 'pending') throw new DomainError('already_decided', `the suggestion was already ${row.state}; a decision is final`);
}

/** After a decision's update changed nothing: the refusal when another decision came first. */
async function refusalOfLostDecision(ports: Ports, principal: Principal, id: string): Promise<void> {
  assertPending(await loadSuggestion(ports, principal, id));
}
