import { and, eq, sql } from 'drizzle-orm';
import type { CeremonyEventReceipt } from '../../shared/api.ts';
import { type CeremonyEventClaims, verifyCeremonyEvent } from '../../shared/authentication.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { ceremonyEvents, notices, runs, signInEpisodes, signInWaits } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';

/**
 * Records a host-signed ceremony outcome event durably and, when it is `verified` and matches
 * the open episode exactly (its ceremony id, current generation, host profile and origin, an
 * active profile binding, and no earlier verified account of that profile and origin other than
 * the event's), resolves the episode, its pending waits and notice and requeues the waiting runs,
 * all in one batch (ADR-0164 part 3). A replayed event (same event id), a late one (the episode
 * already resolved), one from an older generation, for another profile or account, or one that
 * arrives after its runs were cancelled changes nothing beyond its own record. A requeued run
 * has no lease and no latest revision: it resumes with a fresh lease and a fresh read. Runs past
 * their deadline are fenced instead of requeued.
 * @param via how the event arrived: the host's callback, the maintenance pass, or the answer to
 *   `ceremony.begin` (a saved session that was still valid).
 * @returns the shared/api.ts `CeremonyEventReceipt`: `applied` only for the delivery that resolved
 *   the episode, with the runs it requeued.
 * @throws DomainError('unauthenticated') for a token that is not a current event signed with the
 *   host's shared secret.
 */
export async function applyCeremonyEvent(ports: Ports, token: string, via: 'callback' | 'reconciliation' | 'begin'): Promise<CeremonyEventReceipt> {
  const claims = await verifyCeremonyEvent(ports.hostSecret, token);
  if (!claims) throw new DomainError('unauthenticated', 'not a current ceremony event signed by a browser host holding the shared secret');
  const now = ports.clock.now();
  const record = ports.db
    .insert(ceremonyEvents)
    .values({
      eventId: claims.event_id,
      ceremonyId: claims.ceremony_id,
      hostId: claims.host_id,
      hostProfileId: claims.profile_id,
      origin: claims.origin,
      generation: claims.generation,
      outcome: claims.outcome,
      method: claims.method,
      accountSha256: claims.account_sha256 ?? null,
      visitedOrigins: claims.visited_origins ?? null,
      decidedAt: claims.decided_at_ms,
      receivedAt: now,
      via,
    })
    .onConflictDoNothing();
  if (claims.outcome !== 'verified') {
    await ports.db.batch([
      record,
      ports.db
        .update(signInEpisodes)
        .set({ ceremonyState: claims.outcome })
        .where(and(eq(signInEpisodes.ceremonyId, claims.ceremony_id), eq(signInEpisodes.state, 'open'), eq(signInEpisodes.generation, claims.generation))),
    ]);
    return { event_id: claims.event_id, outcome: claims.outcome, applied: false, resumed_runs: [] };
  }
  const matches = episodeMatches(claims);
  const episodeId = sql`(SELECT e.id FROM sign_in_episodes e WHERE e.ceremony_id = ${claims.ceremony_id})`;
  const results = await ports.db.batch([
    record,
    ports.db
      .update(ceremonyEvents)
      .set({ applied: true })
      .where(and(eq(ceremonyEvents.eventId, claims.event_id), eq(ceremonyEvents.applied, false), matches)),
    ports.db
      .update(runs)
      .set({ state: 'queued', claimedBy: null, claimExpiresAt: null, leaseId: null, leaseGeneration: null, latestRevision: null, updatedAt: now })
      .where(
        and(
          eq(runs.state, 'waiting_for_authentication'),
          sql`${runs.deadlineAt} > ${now}`,
          sql`${runs.id} IN (SELECT w.run_id FROM sign_in_waits w WHERE w.episode_id = ${episodeId} AND w.state = 'pending')`,
          matches,
        ),
      ),
    ports.db
      .update(signInWaits)
      .set({ state: 'resolved', resolvedBy: claims.event_id, endedAt: now })
      .where(
        and(
          eq(signInWaits.state, 'pending'),
          sql`${signInWaits.episodeId} = ${episodeId}`,
          sql`${signInWaits.runId} IN (SELECT r.id FROM runs r WHERE r.state = 'queued')`,
          matches,
        ),
      ),
    ports.db
      .update(signInWaits)
      .set({ state: 'fenced', fenceReason: 'run_ended', endedAt: now })
      .where(and(eq(signInWaits.state, 'pending'), sql`${signInWaits.episodeId} = ${episodeId}`, matches)),
    ports.db
      .update(notices)
      .set({ resolvedAt: now })
      .where(and(sql`${notices.episodeId} = ${episodeId}`, sql`${notices.resolvedAt} IS NULL`, matches)),
    ports.db
      .update(signInEpisodes)
      .set({ state: 'resolved', resolvedBy: claims.event_id, resolvedAt: now, ceremonyState: 'verified' })
      .where(and(eq(signInEpisodes.ceremonyId, claims.ceremony_id), matches)),
  ]);
  const applied = rowsChanged(results[1]) === 1;
  const resumed = applied
    ? (await ports.db.select({ runId: signInWaits.runId }).from(signInWaits).where(eq(signInWaits.resolvedBy, claims.event_id))).map((w) => w.runId)
    : [];
  return { event_id: claims.event_id, outcome: claims.outcome, applied, resumed_runs: resumed };
}

/**
 * The condition every statement of a resolution repeats: the event's episode is open at the
 * event's generation, for the event's host profile and origin, under an active binding, and no
 * verified event of another account was applied for that profile and origin before.
 */
function episodeMatches(claims: CeremonyEventClaims) {
  return sql`EXISTS (
    SELECT 1 FROM sign_in_episodes e JOIN profile_bindings b ON b.owner_id = e.owner_id AND b.profile_id = e.profile_id
    WHERE e.ceremony_id = ${claims.ceremony_id} AND e.state = 'open' AND e.generation = ${claims.generation}
      AND e.host_profile_id = ${claims.profile_id} AND e.origin = ${claims.origin}
      AND b.state = 'active' AND b.host_profile_id = e.host_profile_id
      AND NOT EXISTS (
        SELECT 1 FROM ceremony_events p
        WHERE p.host_profile_id = e.host_profile_id AND p.origin = e.origin AND p.applied = 1
          AND p.account_sha256 IS NOT NULL AND p.account_sha256 <> ${claims.account_sha256 ?? ''}
      )
  )`;
}
