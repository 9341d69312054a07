import { and, eq, gt, inArray, or, sql } from 'drizzle-orm';
import { rowsChanged } from '../db/rows-changed.ts';
import { notices, type SignInEpisodeRow, signInEpisodes, signInWaits } from '../db/schema.ts';
import { HOST_CALL_MS, HOST_CONNECT_MS } from '../deadline.ts';
import { connectToProfileHost } from '../fleet/host-connection.ts';
import type { HostSession } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { CEREMONY_TIMEOUT_MS, LIVE_CEREMONY_STATES } from './ceremony.ts';

/**
 * Releasing what a sign-in episode holds once nobody waits on it (issue 32, "nothing held by what
 * is over"): the episode is abandoned (its notice resolved), or revoked with its profile, which
 * frees its browser slot in the edge's count at once, and its ceremony is ended on the profile's
 * host, which gives the browser the ceremony holds there back to admission. Used when a run ends
 * (cancelled, past its deadline, stopped at its recipe's limit), when a profile is revoked, and by
 * the maintenance pass, which also ends again the ceremony of a released episode whose host could
 * not be told.
 */

/** The states of an episode that ended with nobody waiting, whose ceremony the edge ends on the host. */
const RELEASED_EPISODE_STATES = ['abandoned', 'revoked'] as const;

/**
 * Abandons an open episode with no pending waits and resolves its notice, in one batch whose
 * statements each hold only while no wait is pending (a run that joins meanwhile keeps it open).
 * @returns 1 when this call abandoned it, else 0.
 */
export async function abandonEpisode(ports: Ports, episode: SignInEpisodeRow): Promise<number> {
  const now = ports.clock.now();
  const noPending = sql`NOT EXISTS (SELECT 1 FROM sign_in_waits w WHERE w.episode_id = ${episode.id} AND w.state = 'pending')`;
  const [, ended] = await ports.db.batch([
    ports.db
      .update(notices)
      .set({ resolvedAt: now })
      .where(and(eq(notices.episodeId, episode.id), sql`${notices.resolvedAt} IS NULL`, noPending)),
    ports.db
      .update(signInEpisodes)
      .set({ state: 'abandoned', resolvedAt: now })
      .where(and(eq(signInEpisodes.id, episode.id), eq(signInEpisodes.state, 'open'), noPending)),
  ]);
  return rowsChanged(ended);
}

/**
 * Ends a released (abandoned or revoked) episode's ceremony on the host its profile is placed on,
 * then records it ended (`ceremony_state`), so the maintenance pass stops asking (see
 * {@link releasedCeremonyDue}).
 * @throws whatever connecting and {@link HostSession.call} throw; nothing is recorded then.
 */
export async function endReleasedCeremony(ports: Ports, episode: SignInEpisodeRow): Promise<void> {
  let session: HostSession | undefined;
  try {
    session = (await connectToProfileHost(ports, episode.hostProfileId, HOST_CONNECT_MS)).session;
    await session.call('ceremony.end', { ceremony_id: episode.ceremonyId }, HOST_CALL_MS);
  } finally {
    session?.close();
  }
  await ports.db
    .update(signInEpisodes)
    .set({ ceremonyState: 'ended' })
    .where(
      and(eq(signInEpisodes.id, episode.id), inArray(signInEpisodes.state, [...RELEASED_EPISODE_STATES]), eq(signInEpisodes.generation, episode.generation)),
    );
}

/**
 * Hands {@link endReleasedCeremony} to `ports.background`, so the host is told right after the
 * answer. Host trouble is logged, never thrown: the maintenance pass ends the ceremony later.
 */
export function endReleasedCeremonyAfterAnswer(ports: Ports, episode: SignInEpisodeRow): void {
  ports.background(`end the ceremony of released sign-in episode ${episode.id}`, () =>
    endReleasedCeremony(ports, episode).catch((error: unknown) =>
      console.error(`[${ports.requestId}] sign-in episode ${episode.id}: the host was not told to end the ceremony; the maintenance pass retries`, error),
    ),
  );
}

/**
 * The maintenance pass's condition for a released episode whose ceremony the host may still
 * hold: last reported live and not yet ended by the edge, released less than
 * {@link CEREMONY_TIMEOUT_MS} before `now` (past it the host has ended it by itself).
 */
export function releasedCeremonyDue(now: number) {
  return and(
    inArray(signInEpisodes.state, [...RELEASED_EPISODE_STATES]),
    inArray(signInEpisodes.ceremonyState, [...LIVE_CEREMONY_STATES]),
    gt(signInEpisodes.resolvedAt, now - CEREMONY_TIMEOUT_MS),
  );
}

/** The maintenance pass's episodes: open ones, and released ones whose ceremony is still due to end. */
export function episodesToMaintain(now: number) {
  return or(eq(signInEpisodes.state, 'open'), releasedCeremonyDue(now));
}

/**
 * After run `runId` ended and its waits were fenced: abandons each open episode it waited on that
 * no other run waits on any more, then ends that episode's ceremony on the host after the answer
 * (`ports.background`), so the browser is free at once rather than at the next maintenance pass.
 * An episode another run still waits on is kept. Host trouble is logged, never thrown: the
 * maintenance pass ends the ceremony later.
 */
export async function releaseEpisodesOf(ports: Ports, runId: string): Promise<void> {
  const waitedOn = await ports.db
    .select({ episode: signInEpisodes })
    .from(signInWaits)
    .innerJoin(signInEpisodes, eq(signInEpisodes.id, signInWaits.episodeId))
    .where(and(eq(signInWaits.runId, runId), eq(signInWaits.state, 'fenced'), eq(signInEpisodes.state, 'open')))
    .all();
  for (const { episode } of waitedOn) {
    if ((await abandonEpisode(ports, episode)) === 1) endReleasedCeremonyAfterAnswer(ports, episode);
  }
}
