import { and, eq, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/sqlite-core';
import type { SignInSignal } from '../../shared/authentication.ts';
import { originOf } from '../../shared/origin.ts';
import { newId } from '../db/ids.ts';
import { selectedRow } from '../db/insert-select.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { effects, type RunRow, runs, signInEpisodes, signInWaits } from '../db/schema.ts';
import { notifyOwner } from '../notifications/webhooks.ts';
import type { Ports } from '../ports.ts';
import { bindingOf, bindingStatement, hostProfileId } from '../profiles/bindings.ts';
import { beginCeremony, CEREMONY_ENDED_WITHOUT_SIGN_IN, claimWindow, nextGeneration, windowTaken } from './ceremony.ts';

/**
 * Parking a run at a sign-in wall (ADR-0164 part 3, DESIGN.md section 8).
 *
 * A call whose answer shows a sign-in wall parks its run in `waiting_for_authentication` with a
 * persisted wait (run, trusted profile binding, question, generation) on the sign-in episode of
 * that owner, profile and origin; repeated detections join the open episode. The ceremony (the
 * owner's native sign-in in the host's headed browser) is begun by ceremony.ts, outside the
 * request that parked; its outcome arrives as a signed event (events.ts). The run then continues
 * with a fresh lease and a fresh read: parking clears its lease and revision, so nothing planned
 * on the old page can be sent, and no message is added on anyone's behalf.
 */

/** The open episode a wait joins, as the wait's INSERT ... SELECT reads it. */
const episodes = alias(signInEpisodes, 'e');

/** Sign-in waits a run may enter without semantic progress in between; the next one ends it. */
export const MAX_SIGN_IN_ATTEMPTS = 3;

/** Where the sign-in wall was met: the page asking for sign-in, and the page the run wanted. */
export interface SignInWall {
  readonly signal: SignInSignal;
  /** The URL of the page that asks for sign-in (the ceremony shows it to the person). */
  readonly signInUrl: string;
  /** The page the run was after (see protected-page.ts `protectedPageOf`). */
  readonly protectedUrl: string;
  readonly toolCallId: string;
}

/**
 * Parks a running run on the sign-in episode for its profile and the wall's origin, opening the
 * episode when none is open, in one batch; then hands the start (or re-join) of the host's
 * ceremony, which gives the owner exactly one notice for the episode, to `ports.background`, so
 * the request that met the wall answers as soon as the wait is recorded. A run that already entered {@link MAX_SIGN_IN_ATTEMPTS}
 * waits without progress ends instead: `partial` when some write of it succeeded, else
 * `uncertain` (ADR-0164 part 4). A revoked profile ends the run `failed`. Never throws for host
 * trouble: an unreachable host leaves the episode for the maintenance pass to begin again.
 */
export async function parkForSignIn(ports: Ports, run: RunRow, wall: SignInWall): Promise<void> {
  const now = ports.clock.now();
  // The episode is about the site the run was after. A wall on another of the run's origins (an
  // identity provider the app redirected to) is where the person signs in; verification is still
  // made on the page the run was after.
  const protectedOrigin = originOf(wall.protectedUrl);
  const origin = protectedOrigin !== undefined && run.origins.includes(protectedOrigin) ? protectedOrigin : wall.signal.origin;
  const protectedUrl = origin === protectedOrigin ? wall.protectedUrl : wall.signInUrl;
  const hostProfile = await hostProfileId(run.ownerId, run.profileId);
  const binding = await bindingOf(ports, run.ownerId, run.profileId);
  if (binding?.state === 'revoked') {
    await endRun(ports, run, 'failed', `profile ${run.profileId} was revoked; the sign-in ${origin} asks for cannot happen`);
    return;
  }
  if (run.signInAttempts >= MAX_SIGN_IN_ATTEMPTS) {
    const wrote = await ports.db
      .select({ id: effects.id })
      .from(effects)
      .where(and(eq(effects.runId, run.id), eq(effects.state, 'succeeded')))
      .get();
    await endRun(
      ports,
      run,
      wrote ? 'partial' : 'uncertain',
      `stopped: ${origin} asked for sign-in ${run.signInAttempts + 1} times without progress in between; ${wrote ? 'some actions were carried out before' : 'nothing was carried out'}`,
    );
    return;
  }
  const signIns = `${ports.config.publicUrl?.replace(/\/+$/, '') ?? ''}/console/sign-ins`;
  const question = `Sign in to ${origin} in the browser of profile "${run.profileId}" so that run ${run.id} can continue: open the live view from Sign-ins in the owner console (${signIns}).`;
  const openEpisode = sql`(SELECT e.id FROM sign_in_episodes e WHERE e.owner_id = ${run.ownerId} AND e.profile_id = ${run.profileId} AND e.origin = ${origin} AND e.state = 'open')`;
  const runParkedNow = sql`EXISTS (SELECT 1 FROM runs r WHERE r.id = ${run.id} AND r.state = 'waiting_for_authentication' AND r.updated_at = ${now})`;
  const [, , parked] = await ports.db.batch([
    bindingStatement(ports, run.ownerId, run.profileId, hostProfile, now),
    // A new episode only when none is open (the partial unique index): repeated detections join.
    // Only while the run is still running: a run that left `running` parks nothing.
    ports.db
      .insert(signInEpisodes)
      .select((qb) =>
        qb
          .select(
            selectedRow(signInEpisodes, {
              id: newId('sie'),
              ownerId: run.ownerId,
              profileId: run.profileId,
              hostProfileId: hostProfile,
              origin,
              generation: sql`(SELECT coalesce(max(g.generation), 0) + 1 FROM sign_in_episodes g WHERE g.owner_id = ${run.ownerId} AND g.profile_id = ${run.profileId} AND g.origin = ${origin})`,
              ceremonyId: newId('cer'),
              state: 'open',
              question,
              signInUrl: wall.signInUrl,
              protectedUrl,
              openedAt: now,
            }),
          )
          .from(runs)
          .where(and(eq(runs.id, run.id), eq(runs.state, 'running')))
          .getSQL(),
      )
      .onConflictDoNothing(),
    ports.db
      .update(runs)
      .set({
        state: 'waiting_for_authentication',
        signInAttempts: sql`${runs.signInAttempts} + 1`,
        leaseId: null,
        leaseGeneration: null,
        latestRevision: null,
        updatedAt: now,
      })
      .where(and(eq(runs.id, run.id), eq(runs.state, 'running'), sql`${openEpisode} IS NOT NULL`)),
    // The wait exists only when this very batch parked the run.
    ports.db
      .insert(signInWaits)
      .select((qb) =>
        qb
          .select(
            selectedRow(signInWaits, {
              id: newId('siw'),
              runId: run.id,
              episodeId: episodes.id,
              ownerId: run.ownerId,
              hostProfileId: hostProfile,
              origin,
              question,
              generation: episodes.generation,
              toolCallId: wall.toolCallId,
              reasons: JSON.stringify(wall.signal.reasons),
              state: 'pending',
              createdAt: now,
            }),
          )
          .from(episodes)
          .where(
            and(
              eq(episodes.ownerId, run.ownerId),
              eq(episodes.profileId, run.profileId),
              eq(episodes.origin, origin),
              eq(episodes.state, 'open'),
              runParkedNow,
            ),
          )
          .getSQL(),
      )
      .onConflictDoNothing(),
  ]);
  if (rowsChanged(parked) !== 1) return; // the run left `running` meanwhile (cancelled, expired): nothing parks
  const episode = await ports.db
    .select()
    .from(signInEpisodes)
    .where(
      and(
        eq(signInEpisodes.ownerId, run.ownerId),
        eq(signInEpisodes.profileId, run.profileId),
        eq(signInEpisodes.origin, origin),
        eq(signInEpisodes.state, 'open'),
      ),
    )
    .get();
  if (!episode) return;
  // Joining an episode whose ceremony already ended without a sign-in (timed out, replaced, wrong
  // account): a newer generation opens the window again; the episode keeps its one notice.
  const ended = episode.ceremonyState !== null && (CEREMONY_ENDED_WITHOUT_SIGN_IN as readonly string[]).includes(episode.ceremonyState);
  const begin = ended && !(await windowTaken(ports, episode)) ? ((await nextGeneration(ports, episode)) ?? episode) : episode;
  // The ceremony may take the host tens of seconds (it first checks a saved session): it begins
  // after the request has answered, and the maintenance pass begins it again if this is lost.
  await claimWindow(ports, begin);
  ports.background(`begin the ceremony of sign-in episode ${begin.id}`, () => beginCeremony(ports, begin));
  notifyOwner(ports, run.ownerId, 'sign_in_needed', { run_id: run.id, episode_id: episode.id, origin });
}

/** Ends a run that cannot continue, with an explicit summary; one conditional update. */
async function endRun(ports: Ports, run: RunRow, state: 'failed' | 'partial' | 'uncertain', summary: string): Promise<void> {
  const now = ports.clock.now();
  const ended = await ports.db
    .update(runs)
    .set({ state, reportSummary: summary, leaseId: null, updatedAt: now })
    .where(and(eq(runs.id, run.id), eq(runs.state, 'running')))
    .run();
  if (rowsChanged(ended) === 1) notifyOwner(ports, run.ownerId, 'run_ended', { run_id: run.id, state });
}
