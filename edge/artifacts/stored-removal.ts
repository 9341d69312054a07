import { inArray } from 'drizzle-orm';
import type { SQLiteColumn, SQLiteTable } from 'drizzle-orm/sqlite-core';
import type { Ports } from '../ports.ts';
import type { ArtifactKey } from './artifact-store.ts';

/** Most ids one delete statement binds (D1 binds at most 100 parameters). */
const IDS_PER_STATEMENT = 90;

/**
 * Removes stored objects and the rows that name them, for every table whose rows point into the
 * artifact store (the owner's pictures, run artifacts, attached run files): the objects under the
 * rows' `storeKey`s first, then the rows by `id` in one D1 batch of statements of at most 90 ids
 * each, so a failure leaves rows to retry, never orphaned objects.
 * @returns how many rows it removed (`rows.length`).
 */
export async function removeStoredRows(
  ports: Ports,
  table: SQLiteTable & { id: SQLiteColumn },
  rows: ReadonlyArray<{ id: string; storeKey: string }>,
): Promise<number> {
  if (rows.length === 0) return 0;
  await ports.artifacts.delete(rows.map((row) => row.storeKey as ArtifactKey));
  const ids = rows.map((row) => row.id);
  const statements = [];
  for (let start = 0; start < ids.length; start += IDS_PER_STATEMENT) {
    statements.push(ports.db.delete(table).where(inArray(table.id, ids.slice(start, start + IDS_PER_STATEMENT))));
  }
  await ports.db.batch(statements as unknown as Parameters<typeof ports.db.batch>[0]);
  return rows.length;
}
