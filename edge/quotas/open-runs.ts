import { type SQL, sql } from 'drizzle-orm';
import { ACTIVE_RUN_STATES } from '../../shared/api.ts';

/**
 * The open-runs quota (README "Security"), as a condition for the statements that write a run:
 * true (SQL) while `ownerId` has more than `limit` runs not yet ended (queued, running, waiting),
 * the run being written included. A batch that inserts a run ends with deletes of its rows under
 * this condition: batches run one after another, so runs created together can never all pass,
 * and a refused one leaves nothing behind.
 */
export function overOpenRunsQuota(ownerId: string, limit: number): SQL {
  const active = sql.join(
    ACTIVE_RUN_STATES.map((state) => sql`${state}`),
    sql`, `,
  );
  return sql`(select count(*) from runs where runs.owner_id = ${ownerId} and runs.state in (${active})) > ${limit}`;
}
