import { and, asc, eq, exists, gt, isNotNull, isNull, lt, or } from 'drizzle-orm';
import type { Principal } from '../auth/principal.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type RunRow, runs, toolCalls } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { ANTICIPATION_DECISION_MS } from '../memories/provider.ts';
import { runAnticipations } from '../memories/tables.ts';
import type { Ports } from '../ports.ts';
import { awaitFleetRoom } from '../quotas/lease-availability.ts';

/**
 * An agent claims the oldest queued run of its owner (or, with `runId`, that run), or a running
 * run whose claim expired while nothing was in flight: one conditional update, so two agents
 * never both win. Runs bound to a reviewed recipe are never offered (issue 19), nor a queued run
 * whose anticipation is still being decided (issue 34: no recorded decision and made less than
 * ANTICIPATION_DECISION_MS ago), so no agent gets a run without the owner's anticipated statements.
 * @throws DomainError('not_found') when no run (or not that run) is waiting to be claimed;
 *   DomainError('fleet_full') when no browser slot is free for the run's profile within the
 *   admission wait (issue 32).
 */
export async function claimRun(ports: Ports, principal: Principal, runId?: string): Promise<RunRow> {
  const now = ports.clock.now();
  const anticipationDecided = exists(ports.db.select({ runId: runAnticipations.runId }).from(runAnticipations).where(eq(runAnticipations.runId, runs.id)));
  const candidates = await ports.db
    .select()
    .from(runs)
    .where(
      and(
        eq(runs.ownerId, principal.ownerId),
        runId === undefined ? undefined : eq(runs.id, runId),
        gt(runs.deadlineAt, now),
        // A recipe-bound run is the recipe runner's (issue 19), never an agent's.
        isNull(runs.recipeId),
        or(
          and(eq(runs.state, 'queued'), or(anticipationDecided, lt(runs.createdAt, now - ANTICIPATION_DECISION_MS))),
          and(eq(runs.state, 'running'), isNotNull(runs.claimExpiresAt), lt(runs.claimExpiresAt, now)),
        ),
      ),
    )
    .orderBy(asc(runs.createdAt))
    .limit(10);
  for (const run of candidates) {
    const active = await ports.db
      .select({ id: toolCalls.id })
      .from(toolCalls)
      .where(and(eq(toolCalls.runId, run.id), eq(toolCalls.state, 'dispatching')))
      .get();
    if (active) continue;
    // A full fleet refuses the claim (429 fleet_full) before anything changes.
    await awaitFleetRoom(ports, run);
    const claimExpiresAt = now + ports.config.claimTtlMs;
    const claimed = await ports.db
      .update(runs)
      .set({ state: 'running', claimedBy: principal.id, claimExpiresAt, updatedAt: now })
      .where(and(eq(runs.id, run.id), eq(runs.state, run.state), run.claimedBy === null ? isNull(runs.claimedBy) : eq(runs.claimedBy, run.claimedBy)))
      .run();
    if (rowsChanged(claimed) === 1) return { ...run, state: 'running', claimedBy: principal.id, claimExpiresAt, updatedAt: now };
  }
  throw new DomainError('not_found', runId === undefined ? 'no run is waiting to be claimed' : `run ${runId} is not waiting to be claimed`);
}
