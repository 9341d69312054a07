import type { RunResult } from '../ports.ts';

/**
 * How many rows a write statement changed (inserted, updated or deleted), whichever driver ran
 * it: D1 reports `meta.changes`, libSQL `rowsAffected`. Rows changed by triggers are not counted
 * (SQLite's `changes()` on both). Conditional state transitions check this is exactly 1.
 */
export function rowsChanged(result: RunResult): number {
  return 'meta' in result ? result.meta.changes : result.rowsAffected;
}
