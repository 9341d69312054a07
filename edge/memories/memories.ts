import { and, desc, eq, type SQL, sql } from 'drizzle-orm';
import { type CreateMemoryBody, MAX_ACTIVE_MEMORIES, type MemoryState, type UpdateMemoryBody } from '../../shared/memories.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { selectedRow } from '../db/insert-select.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type MemoryRow, memories, principals } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';

// The owner's memories (issue 34, ADR-0168): written, edited and retired by the owner only,
// never read across owners. Every write is one conditional statement or one batch.

/**
 * SQL true while `ownerId` has fewer than {@link MAX_ACTIVE_MEMORIES} active memories: the
 * condition of every statement that makes a memory active, so racing creates and acceptances
 * can never pass the cap together (each statement counts what the ones before it wrote).
 */
export function roomForActiveMemory(ownerId: string): SQL {
  return sql`(select count(*) from memories where memories.owner_id = ${ownerId} and memories.state = 'active') < ${MAX_ACTIVE_MEMORIES}`;
}

/**
 * Creates an active memory in the owner's own words (`source: owner`): one conditional insert,
 * written only while the owner has fewer than {@link MAX_ACTIVE_MEMORIES} active memories.
 * @throws DomainError('forbidden') for a principal that is not an owner;
 *   DomainError('quota_exceeded') at the cap (nothing written).
 */
export async function createMemory(ports: Ports, principal: Principal, body: CreateMemoryBody): Promise<MemoryRow> {
  const ownerId = ownerIdOf(principal);
  const now = ports.clock.now();
  const row: MemoryRow = {
    id: newId('mem'),
    ownerId,
    statement: body.statement,
    source: 'owner',
    suggestionId: null,
    state: 'active',
    revision: 1,
    createdAt: now,
    updatedAt: now,
    retiredAt: null,
  };
  const inserted = await ports.db
    .insert(memories)
    .select((qb) =>
      qb
        .select(selectedRow(memories, row))
        .from(principals)
        .where(and(eq(principals.id, ownerId), roomForActiveMemory(ownerId)))
        .getSQL(),
    )
    .run();
  if (rowsChanged(inserted) !== 1) throw activeMemoryCap();
  return row;
}

/** The refusal of a memory past the cap. */
export function activeMemoryCap(): DomainError {
  return new DomainError('quota_exceeded', `an owner keeps at most ${MAX_ACTIVE_MEMORIES} active memories; retire one first`);
}

/** The owner's memories, newest first; only those in `state` when given. */
export async function listMemories(ports: Ports, principal: Principal, state?: MemoryState): Promise<MemoryRow[]> {
  const ownerId = ownerIdOf(principal);
  return ports.db
    .select()
    .from(memories)
    .where(and(eq(memories.ownerId, ownerId), state === undefined ? undefined : eq(memories.state, state)))
    .orderBy(desc(memories.createdAt), sql`memories.rowid desc`);
}

/**
 * The owner's memory `id`.
 * @throws DomainError('not_found') for no memory, or another owner's (no existence leak).
 */
export async function loadMemory(ports: Ports, principal: Principal, id: string): Promise<MemoryRow> {
  const row = await ports.db
    .select()
    .from(memories)
    .where(and(eq(memories.id, id), eq(memories.ownerId, ownerIdOf(principal))))
    .get();
  if (row === undefined) throw new DomainError('not_found', `no memory ${id}`);
  return row;
}

/**
 * Edits a memory's statement (revision + 1) or retires it (final; the revision stays). One
 * conditional update on the memory being active at the revision read (or the one the body
 * names): of two racing changes one wins, the other is refused.
 * @throws DomainError('not_found') for no memory of this owner;
 *   DomainError('already_decided') for a retired memory (retirement is final);
 *   DomainError('stale_revision') when `revision` is not the current one, or another change
 *   came first.
 */
export async function updateMemory(ports: Ports, principal: Principal, id: string, body: UpdateMemoryBody): Promise<MemoryRow> {
  const current = await loadMemory(ports, principal, id);
  assertChangeable(current, body.revision);
  const now = ports.clock.now();
  const change: Partial<MemoryRow> =
    body.state === 'retired'
      ? { state: 'retired', retiredAt: now, updatedAt: now }
      : { statement: body.statement ?? current.statement, revision: current.revision + 1, updatedAt: now };
  const updated = await ports.db
    .update(memories)
    .set(change)
    .where(and(eq(memories.id, current.id), eq(memories.ownerId, current.ownerId), eq(memories.state, 'active'), eq(memories.revision, current.revision)))
    .run();
  if (rowsChanged(updated) !== 1) {
    // Another change came first: say which.
    assertChangeable(await loadMemory(ports, principal, id), current.revision);
    throw new DomainError('stale_revision', `memory ${id} was changed concurrently; read it and try again`);
  }
  return { ...current, ...change };
}

/** @throws DomainError('already_decided' | 'stale_revision') when `row` cannot be changed at `revision`. */
function assertChangeable(row: MemoryRow, revision: number | undefined): void {
  if (row.state === 'retired') throw new DomainError('already_decided', `memory ${row.id} is retired, which is final; write a new memory instead`);
  if (revision !== undefined && revision !== row.revision) {
    throw new DomainError('stale_revision', `memory ${row.id} is at revision ${row.revision}, not ${revision}; read it and try again`);
  }
}

/**
 * The owner a principal's memories belong to.
 * @throws DomainError('forbidden') for any principal but an owner (agents only suggest).
 */
export function ownerIdOf(principal: Principal): string {
  if (principal.kind !== 'owner') throw new DomainError('forbidden', `memories are the owner's to write and read, not an ${principal.kind}'s`);
  return principal.ownerId;
}
