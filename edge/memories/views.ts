import type { MemoryView, SuggestionView } from '../../shared/memories.ts';
import type { MemoryRow, MemorySuggestionRow } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';

/** The API view of a memory row (instants ISO-8601). */
export function memoryView(row: MemoryRow): MemoryView {
  return {
    id: row.id,
    statement: row.statement,
    source: row.source,
    state: row.state,
    revision: row.revision,
    suggestion_id: row.suggestionId,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    retired_at: row.retiredAt === null ? null : iso(row.retiredAt),
  };
}

/** The API view of a suggestion row (instants ISO-8601). */
export function suggestionView(row: MemorySuggestionRow): SuggestionView {
  return {
    id: row.id,
    run_id: row.runId,
    statement: row.statement,
    page_derived: row.pageDerived,
    proposed_by: row.proposedBy,
    state: row.state,
    memory_id: row.memoryId,
    created_at: iso(row.createdAt),
    decided_at: row.decidedAt === null ? null : iso(row.decidedAt),
  };
}
