import { and, asc, eq, sql } from 'drizzle-orm';
import { runs, type SignInEpisodeRow, type SignInWaitRow, signInEpisodes, signInWaits } from '../db/schema.ts';
import { HOST_CALL_MS, HOST_CONNECT_MS } from '../deadline.ts';
import { DomainError } from '../domain-error.ts';
import { connectToProfileHost } from '../fleet/host-connection.ts';
import { HostCallError, HostNoAnswer, type HostSession, HostUnreachable } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { expireIfPastDeadline } from '../runs/lifecycle.ts';
import { beginCeremony, nextGeneration, noteCeremonyState, notifyOwner, windowTaken } from './ceremony.ts';
import { applyCeremonyEvent } from './events.ts';
import { abandonEpisode, endReleasedCeremony, episodesToMaintain } from './release.ts';

/** Most open episodes one maintenance pass looks at. */
const RECONCILE_BATCH = 50;

/** What one maintenance pass did. */
export interface ReconciliationReport {
  readonly checked: number;
  readonly resolved: number;
  readonly abandoned: number;
  readonly restarted: number;
}

/**
 * The maintenance pass over open sign-in episodes (cron; covers lost callbacks and restarts of the
 * edge or the host): fences waits whose runs passed their deadline or ended; abandons an episode
 * nobody waits for any more (its notice resolved, the host's ceremony ended; see release.ts), and
 * ends again the ceremony of a released (abandoned or revoked) episode whose host could not be
 * told; asks the host for the ceremony's state and applies an outcome event it missed; begins the
 * ceremony again when the host no longer knows it, or a newer generation when the host ended it
 * for another episode of the profile, each only while no other episode's ceremony holds the
 * profile's one window (so episodes of one profile take turns instead of ending each other). At
 * most 50 episodes a pass, the least recently checked first. Never throws for host trouble.
 */
export async function reconcileSignIns(ports: Ports): Promise<ReconciliationReport> {
  // Least recently checked first, so every open episode gets its turn however many there are.
  const open = await ports.db
    .select()
    .from(signInEpisodes)
    .where(episodesToMaintain(ports.clock.now()))
    .orderBy(sql`${signInEpisodes.checkedAt} IS NOT NULL`, asc(signInEpisodes.checkedAt), asc(signInEpisodes.openedAt))
    .limit(RECONCILE_BATCH);
  let resolved = 0;
  let abandoned = 0;
  let restarted = 0;
  for (const episode of open) {
    await ports.db.update(signInEpisodes).set({ checkedAt: ports.clock.now() }).where(eq(signInEpisodes.id, episode.id));
    const live = episode.state === 'open' ? await liveWaits(ports, episode) : 0;
    let session: HostSession | undefined;
    try {
      // Released before (abandoned or revoked), but its host was not told (unreachable then): tell it now.
      if (episode.state !== 'open') {
        await endReleasedCeremony(ports, episode);
        continue;
      }
      if (live === 0) {
        // Ended only by the pass that abandoned it: one that lost kept it for a run that joined,
        // or another request abandoned it and ends the ceremony itself.
        if ((await abandonEpisode(ports, episode)) === 1) {
          abandoned += 1;
          await endReleasedCeremony(ports, episode);
        }
        continue;
      }
      // Where the profile is placed now: a ceremony whose host was lost begins again on the next
      // host (the host there does not know it), so the sign-in follows the profile (issue 32).
      session = (await connectToProfileHost(ports, episode.hostProfileId, HOST_CONNECT_MS)).session;
      const status = await session.call('ceremony.status', { ceremony_id: episode.ceremonyId }, HOST_CALL_MS);
      if (status.event) {
        const receipt = await applyCeremonyEvent(ports, status.event, 'reconciliation');
        if (receipt.applied) resolved += 1;
        // Ended by the host for another episode of the profile: its turn comes when the window is free.
        else if (status.state === 'ended' && !(await windowTaken(ports, episode))) {
          const next = await nextGeneration(ports, episode);
          if (next) {
            session.close();
            session = undefined;
            await beginCeremony(ports, next);
            restarted += 1;
          }
        }
      } else if (status.state === 'unknown') {
        // The host forgot it (restarted): begin it again, once the profile's window is free.
        await noteCeremonyState(ports, episode, 'unknown');
        session.close();
        session = undefined;
        if (!(await windowTaken(ports, episode))) {
          await beginCeremony(ports, episode);
          restarted += 1;
        }
      } else {
        await noteCeremonyState(ports, episode, status.state);
        // A ceremony waiting for the person has told the owner, even if the request that began
        // it ended before it could (a background task cut short).
        if (status.state === 'awaiting_person' || status.state === 'challenge') await notifyOwner(ports, episode);
      }
    } catch (error) {
      if (error instanceof DomainError && error.code === 'host_unavailable')
        console.error(`[${ports.requestId}] sign-in episode ${episode.id}: ${error.message}`);
      else if (error instanceof DomainError)
        console.error(`[${ports.requestId}] sign-in episode ${episode.id}: the host's event was refused: ${error.message}`);
      // Host trouble (unreachable, no answer, a typed refusal) is routine: the next pass asks again.
      else if (!(error instanceof HostUnreachable || error instanceof HostNoAnswer || error instanceof HostCallError)) {
        console.error(`[${ports.requestId}] sign-in episode ${episode.id}: the maintenance pass failed unexpectedly; the next pass tries again`, error);
      }
    } finally {
      session?.close();
    }
  }
  return { checked: open.length, resolved, abandoned, restarted };
}

/** Counts the episode's pending waits whose runs still wait, fencing those of runs that ended. */
async function liveWaits(ports: Ports, episode: SignInEpisodeRow): Promise<number> {
  const waits = await ports.db
    .select()
    .from(signInWaits)
    .where(and(eq(signInWaits.episodeId, episode.id), eq(signInWaits.state, 'pending')));
  let live = 0;
  for (const wait of waits) if (await fenceIfRunEnded(ports, wait)) live += 1;
  return live;
}

/** Fences a pending wait whose run expired or ended; true when the wait is still live. */
async function fenceIfRunEnded(ports: Ports, wait: SignInWaitRow): Promise<boolean> {
  const run = await ports.db.select().from(runs).where(eq(runs.id, wait.runId)).get();
  if (!run) return false;
  const current = await expireIfPastDeadline(ports, run);
  if (current.state === 'waiting_for_authentication') return true;
  await ports.db
    .update(signInWaits)
    .set({
      state: 'fenced',
      fenceReason: current.state === 'cancelled' ? 'cancelled' : current.state === 'deadline_exceeded' ? 'deadline_exceeded' : 'run_ended',
      endedAt: ports.clock.now(),
    })
    .where(and(eq(signInWaits.id, wait.id), eq(signInWaits.state, 'pending')));
  return false;
}
