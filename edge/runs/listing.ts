import { and, desc, eq, inArray, lt, or, type SQL, sql } from 'drizzle-orm';
import { DEFAULT_RUN_PAGE, type RunList, type RunState } from '../../shared/api.ts';
import type { Principal } from '../auth/principal.ts';
import { type PlacementRow, profilePlacements, type RunRow, runs, type SignInWaitRow, signInWaits } from '../db/schema.ts';
import { anticipationsOf, NO_ANTICIPATION } from '../memories/anticipation-views.ts';
import type { Ports } from '../ports.ts';
import { hostProfileId } from '../profiles/bindings.ts';
import { decodeRunCursor, encodeRunCursor } from './list-cursor.ts';
import { runView } from './view.ts';

/** What `GET /v1/runs` asks for: filters, page size (1-100) and the previous page's cursor. */
export interface RunListRequest {
  readonly state?: RunState;
  readonly profile_id?: string;
  readonly limit?: number;
  readonly cursor?: string;
}

/**
 * One page of runs for `principal` (issue 32): an owner's own runs, or every run for an operator,
 * newest first by (created_at, id) over the index of that order (`runs_owner_idx`,
 * `runs_created_idx`), with each run's pending sign-in wait and its profile's placement as
 * `GET /v1/runs/{id}` shows them, and its anticipation (issue 34). States are as recorded: a run
 * past its deadline reads as `deadline_exceeded` once the cron pass or its own view has ended it.
 * At most four statements.
 * @throws DomainError('invalid_cursor') for a cursor the edge did not make.
 */
export async function listRuns(ports: Ports, principal: Principal, request: RunListRequest): Promise<RunList> {
  const limit = request.limit ?? DEFAULT_RUN_PAGE;
  const after = request.cursor === undefined ? undefined : decodeRunCursor(request.cursor);
  const conditions: (SQL | undefined)[] = [
    principal.kind === 'operator' ? undefined : eq(runs.ownerId, principal.ownerId),
    request.state === undefined ? undefined : eq(runs.state, request.state),
    request.profile_id === undefined ? undefined : eq(runs.profileId, request.profile_id),
    after === undefined ? undefined : or(lt(runs.createdAt, after.createdAt), and(eq(runs.createdAt, after.createdAt), lt(runs.id, after.id))),
  ];
  // One row more than the page says whether another page follows.
  const rows = await ports.db
    .select()
    .from(runs)
    .where(and(...conditions))
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(limit + 1)
    .all();
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const profiles = await Promise.all(page.map((row) => hostProfileId(row.ownerId, row.profileId)));
  const [waits, placements, anticipations] = await Promise.all([
    pendingWaits(ports, page),
    placementsOf(ports, profiles),
    anticipationsOf(
      ports,
      page.map((row) => row.id),
    ),
  ]);
  return {
    runs: page.map((row, index) => runView(row, anticipations.get(row.id) ?? NO_ANTICIPATION, waits.get(row.id), placements.get(profiles[index]!))),
    next_cursor: rows.length > limit && last !== undefined ? encodeRunCursor(last) : null,
  };
}

/**
 * The pending sign-in waits of the runs of `page` that wait for one, by run id; nothing is read
 * when none waits. The state is a literal: a page's 100 ids are all the bound parameters D1 allows.
 */
async function pendingWaits(ports: Ports, page: readonly RunRow[]): Promise<Map<string, SignInWaitRow>> {
  const waiting = page.filter((row) => row.state === 'waiting_for_authentication').map((row) => row.id);
  if (waiting.length === 0) return new Map();
  const rows = await ports.db
    .select()
    .from(signInWaits)
    .where(and(inArray(signInWaits.runId, waiting), sql`${signInWaits.state} = 'pending'`))
    .all();
  return new Map(rows.map((row) => [row.runId, row]));
}

/** The placements of the host profiles `profiles` (at most 100), by host profile id. */
async function placementsOf(ports: Ports, profiles: readonly string[]): Promise<Map<string, PlacementRow>> {
  const ids = [...new Set(profiles)];
  if (ids.length === 0) return new Map();
  const rows = await ports.db.select().from(profilePlacements).where(inArray(profilePlacements.hostProfileId, ids)).all();
  return new Map(rows.map((row) => [row.hostProfileId, row]));
}
