import { and, eq, inArray, sql } from 'drizzle-orm';
import { ACTIVE_RUN_STATES, type ProfileBindingView } from '../../shared/api.ts';
import type { Principal } from '../auth/principal.ts';
import { notices, profileBindings, runs, signInEpisodes } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { releaseLease } from '../pipeline/lease.ts';
import type { Ports } from '../ports.ts';
import { fenceRunStatements } from '../runs/fence.ts';
import { endReleasedCeremonyAfterAnswer } from '../sign-in/release.ts';
import { hostProfileId } from './bindings.ts';

/**
 * Revokes the owner's profile binding (ADR-0164 part 3: revocation fences the continuation): in
 * one batch the binding becomes revoked; every run on the profile that has not ended (queued,
 * running, waiting for approval or for sign-in) ends `failed`, with its pending approvals and
 * parked calls cancelled; the profile's open episodes end `revoked` with their notices resolved
 * and their pending waits fenced. A call already being dispatched finishes and is recorded, as on
 * cancellation. Afterwards new runs, schedules and proposals on the profile are refused
 * (`profile_revoked`), and events for it match nothing. Leases are released best effort, and the
 * revoked episodes' ceremonies are ended on the host after the answer (see release.ts), so their
 * browsers are free at once; a host that cannot be told is left to the maintenance pass.
 */
export async function revokeProfile(ports: Ports, principal: Principal, profileId: string): Promise<ProfileBindingView> {
  const now = ports.clock.now();
  const ownerId = principal.ownerId;
  const profileRuns = and(eq(runs.ownerId, ownerId), eq(runs.profileId, profileId))!;
  const openEpisodes = sql`(SELECT e.id FROM sign_in_episodes e WHERE e.owner_id = ${ownerId} AND e.profile_id = ${profileId} AND e.state = 'open')`;
  const active = await ports.db
    .select()
    .from(runs)
    .where(and(profileRuns, inArray(runs.state, [...ACTIVE_RUN_STATES])));
  const revoked = `profile ${profileId} was revoked`;
  // The last statement's rows: the episodes this revocation ended.
  const [, , , , , , revokedEpisodes] = await ports.db.batch([
    ports.db
      .insert(profileBindings)
      .values({ ownerId, profileId, hostProfileId: await hostProfileId(ownerId, profileId), state: 'revoked', revokedAt: now, createdAt: now })
      .onConflictDoUpdate({ target: [profileBindings.ownerId, profileBindings.profileId], set: { state: 'revoked', revokedAt: now } }),
    ...fenceRunStatements(ports.db, { where: profileRuns }, { reason: 'profile_revoked', endState: 'failed', summary: revoked, callMessage: revoked, now }),
    ports.db
      .update(notices)
      .set({ resolvedAt: now })
      .where(and(sql`${notices.episodeId} IN ${openEpisodes}`, sql`${notices.resolvedAt} IS NULL`)),
    ports.db
      .update(signInEpisodes)
      .set({ state: 'revoked', resolvedAt: now })
      .where(and(eq(signInEpisodes.ownerId, ownerId), eq(signInEpisodes.profileId, profileId), eq(signInEpisodes.state, 'open')))
      .returning(),
  ]);
  for (const run of active) await releaseLease(ports, run);
  // Only the profile's runs wait on its episodes, and the batch fenced all of them: nobody waits any more.
  for (const episode of revokedEpisodes) endReleasedCeremonyAfterAnswer(ports, episode);
  return { profile_id: profileId, state: 'revoked', revoked_at: iso(now), fenced_runs: active.map((run) => run.id) };
}
