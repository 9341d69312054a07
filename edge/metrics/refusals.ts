import { sql } from 'drizzle-orm';
import type { ErrorCode } from '../../shared/errors.ts';
import { refusalCounts } from '../db/schema.ts';
import type { Ports } from '../ports.ts';

/**
 * Counts one refusal answered with `code` (`GET /metrics`: `refusals_total{code}`), after the
 * answer (the runtime's background runner): one upsert, and a failure is only logged. The count is
 * operational, outside every domain state, so counting a refusal does not contradict "a refusal
 * changes nothing".
 * @param ports undefined when the request failed before its ports existed (nothing is counted).
 */
export function countRefusal(ports: Ports | undefined, code: ErrorCode): void {
  if (ports === undefined) return;
  ports.background(`count refusal ${code}`, () =>
    ports.db
      .insert(refusalCounts)
      .values({ code, count: 1 })
      .onConflictDoUpdate({ target: refusalCounts.code, set: { count: sql`${refusalCounts.count} + 1` } })
      .run(),
  );
}
