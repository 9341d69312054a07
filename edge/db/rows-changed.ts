import type { RunResult } from '../ports.ts';

/**
 * How many rows a write statement changed (inserted, updated or deleted), whichever driver ran
 * it: D1 reports `meta.changes`, libSQL `rowsAffected`. The two differ on rows changed by the
 * statement's triggers: D1 counts them, libSQL (SQLite's `changes()`) does not. Conditional state
 * transitions of a table without such triggers check this is exactly 1; of one with them, use
 * {@link changedItsRow}.
 */
export function rowsChanged(result: RunResult): number {
  return 'meta' in result ? result.meta.changes : result.rowsAffected;
}

/**
 * Whether a conditional update of one row, picked by its primary key, changed that row: the
 * check that it won. At least one row rather than exactly one, because D1 also counts the rows
 * the update's triggers changed (drizzle/0022_decision_and_outcome_triggers.sql: a decided
 * approval resumes its run, a call leaving `dispatching` finishes its effect) and libSQL does
 * not; a trigger fires only once the row itself changed, so neither count is above 0 otherwise.
 */
export function changedItsRow(result: RunResult): boolean {
  return rowsChanged(result) > 0;
}
