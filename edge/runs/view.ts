import type { PlacementView, RunView } from '../../shared/api.ts';
import type { PlacementRow, RunRow, SignInWaitRow } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import type { RunAnticipationShown } from '../memories/anticipation-views.ts';

/**
 * The API view of a run row; `shown` is its anticipation (edge/memories/anticipation-views.ts,
 * issue 34: verified anticipations only); `wait` is its pending sign-in wait, shown while the run
 * is `waiting_for_authentication`; `placement` is its profile's placement in the fleet (issue 32).
 */
export function runView(row: RunRow, shown: RunAnticipationShown, wait?: SignInWaitRow, placement?: PlacementRow): RunView {
  return {
    id: row.id,
    state: row.state,
    profile_id: row.profileId,
    intent: row.intent,
    origins: row.origins,
    deadline_at: iso(row.deadlineAt),
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    latest_revision: row.latestRevision,
    summary: row.reportSummary,
    authentication:
      wait && row.state === 'waiting_for_authentication'
        ? { wait_id: wait.id, episode_id: wait.episodeId, origin: wait.origin, question: wait.question, generation: wait.generation, reasons: wait.reasons }
        : null,
    recipe:
      row.recipeId !== null && row.recipeVersion !== null && row.recipeHash !== null
        ? { id: row.recipeId, version: row.recipeVersion, hash: row.recipeHash }
        : null,
    placement: placement === undefined ? null : placementView(placement),
    anticipated: shown.anticipated,
    anticipation: shown.anticipation,
  };
}

/** The API view of a placement row. */
export function placementView(row: PlacementRow): PlacementView {
  return {
    host_id: row.hostId,
    generation: row.generation,
    placed_at: iso(row.placedAt),
    reason: row.reason,
    previous_host_id: row.previousHostId,
  };
}
