import { and, eq, inArray, notExists, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/sqlite-core';
import type { CeremonyState } from '../../shared/authentication.ts';
import { newId } from '../db/ids.ts';
import { selectedRow } from '../db/insert-select.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { notices, type SignInEpisodeRow, signInEpisodes } from '../db/schema.ts';
import { HOST_CONNECT_MS } from '../deadline.ts';
import { noteReportedHostId } from '../fleet/health.ts';
import { connectToProfileHost } from '../fleet/host-connection.ts';
import { placementGrantOf } from '../fleet/placement.ts';
import type { HostSession } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { applyCeremonyEvent } from './events.ts';

/**
 * The host's ceremony for a sign-in episode (ADR-0164 part 2): beginning it in the profile's one
 * headed window, newer generations, the window's turn-taking between episodes of one profile,
 * and the episode's one owner notice.
 */

/** How long the owner is given to sign in during one ceremony, in ms (15 minutes). */
export const CEREMONY_TIMEOUT_MS = 15 * 60_000;

/** How long the ceremony commands may take, in ms (`ceremony.begin` may first verify a saved session). */
const CEREMONY_CALL_MS = 45_000;

/** Ceremony outcomes after which an open episode has no live ceremony. */
export const CEREMONY_ENDED_WITHOUT_SIGN_IN = ['not_verified', 'ended', 'account_mismatch'] as const;

/**
 * Moves an open episode to its next ceremony generation (a new ceremony id) by one conditional
 * update; undefined when it is no longer open at that generation.
 */
export async function nextGeneration(ports: Ports, episode: SignInEpisodeRow): Promise<SignInEpisodeRow | undefined> {
  const ceremonyId = newId('cer');
  const changed = await ports.db
    .update(signInEpisodes)
    .set({ generation: episode.generation + 1, ceremonyId, ceremonyState: null })
    .where(and(eq(signInEpisodes.id, episode.id), eq(signInEpisodes.state, 'open'), eq(signInEpisodes.generation, episode.generation)))
    .run();
  return rowsChanged(changed) === 1 ? { ...episode, generation: episode.generation + 1, ceremonyId, ceremonyState: null } : undefined;
}

/**
 * Asks the host to open (or report) the episode's ceremony. When the profile's saved session is
 * still valid the host verifies at once and the episode resolves without bothering the owner;
 * otherwise the owner gets the episode's one notice (inserted only while the episode is open, at
 * most once: a unique episode id). Host trouble is not an error: the notice still goes out and
 * the maintenance pass begins the ceremony again.
 */
export async function beginCeremony(ports: Ports, episode: SignInEpisodeRow, options: { takeWindow?: boolean } = {}): Promise<void> {
  let state: CeremonyState | undefined;
  let session: HostSession | undefined;
  try {
    // A profile has one window: while another episode's ceremony is live in it, this one waits
    // (the maintenance pass begins it once the window is free) instead of ending the other.
    if (!(await claimWindow(ports, episode, options))) throw new WindowTaken();
    // The ceremony runs where the profile is placed (issue 32), with its placement there.
    const connection = await connectToProfileHost(ports, episode.hostProfileId, HOST_CONNECT_MS);
    session = connection.session;
    await noteReportedHostId(ports, connection.host.id, session.hostId);
    const answer = await session.call(
      'ceremony.begin',
      {
        placement: await placementGrantOf(ports, connection.placed),
        ceremony_id: episode.ceremonyId,
        profile_id: episode.hostProfileId,
        origin: episode.origin,
        generation: episode.generation,
        sign_in_url: episode.signInUrl,
        protected_url: episode.protectedUrl,
        timeout_ms: CEREMONY_TIMEOUT_MS,
      },
      CEREMONY_CALL_MS,
    );
    state = answer.state;
    if (answer.event) {
      const receipt = await applyCeremonyEvent(ports, answer.event, 'begin');
      if (receipt.applied) return;
    }
    await noteCeremonyState(ports, episode, state);
  } catch (error) {
    // The window is taken, host trouble, or an event the edge refuses (e.g. a host clock far
    // off): the owner is still told, and the maintenance pass asks the host again.
    if (!(error instanceof WindowTaken))
      console.error(`[${ports.requestId}] sign-in episode ${episode.id}: the ceremony did not begin cleanly; the maintenance pass retries`, error);
  } finally {
    session?.close();
  }
  await notifyOwner(ports, episode);
}

/** The profile's sign-in window is in use by another episode's ceremony. */
class WindowTaken extends Error {}

/** Ceremony states in which a ceremony holds its profile's window on the host. */
export const LIVE_CEREMONY_STATES = ['awaiting_person', 'verifying', 'challenge'] as const;

/**
 * The query for another open episode of the same host profile whose ceremony is live (as last
 * reported): the one thing that holds the profile's one sign-in window.
 */
function liveCeremonyElsewhere(ports: Ports, episode: SignInEpisodeRow) {
  const others = alias(signInEpisodes, 'o');
  return ports.db
    .select({ id: others.id })
    .from(others)
    .where(
      and(
        eq(others.hostProfileId, episode.hostProfileId),
        eq(others.state, 'open'),
        sql`${others.id} <> ${episode.id}`,
        inArray(others.ceremonyState, [...LIVE_CEREMONY_STATES]),
      ),
    );
}

/** Whether another open episode of the same host profile has a live ceremony (as last reported). */
export async function windowTaken(ports: Ports, episode: SignInEpisodeRow): Promise<boolean> {
  return (await liveCeremonyElsewhere(ports, episode).get()) !== undefined;
}

/**
 * Records the host's last reported ceremony state on the episode (for the owner's view and the
 * window's turn-taking), only while the episode is still open at that generation; `undefined`
 * (no answer) records nothing.
 */
export async function noteCeremonyState(ports: Ports, episode: SignInEpisodeRow, state: CeremonyState | undefined): Promise<void> {
  if (state === undefined) return;
  await ports.db
    .update(signInEpisodes)
    .set({ ceremonyState: state })
    .where(and(eq(signInEpisodes.id, episode.id), eq(signInEpisodes.state, 'open'), eq(signInEpisodes.generation, episode.generation)));
}

/**
 * Gives the owner the episode's one sign-in notice (DESIGN.md section 8: exactly one per
 * unresolved episode), naming the run whose wall opened it. Inserted only while the episode is
 * open and has a wait; a second call changes nothing (one notice per episode id).
 */
export async function notifyOwner(ports: Ports, episode: SignInEpisodeRow): Promise<void> {
  const now = ports.clock.now();
  const episodes = alias(signInEpisodes, 'e');
  await ports.db
    .insert(notices)
    .select((qb) =>
      qb
        .select(
          selectedRow(notices, {
            id: newId('ntc'),
            ownerId: episodes.ownerId,
            kind: 'sign_in_required',
            episodeId: episodes.id,
            runId: sql`(SELECT w.run_id FROM sign_in_waits w WHERE w.episode_id = ${episodes.id} ORDER BY w.created_at LIMIT 1)`,
            text: episodes.question,
            createdAt: now,
          }),
        )
        .from(episodes)
        .where(and(eq(episodes.id, episode.id), eq(episodes.state, 'open'), sql`EXISTS (SELECT 1 FROM sign_in_waits w WHERE w.episode_id = ${episodes.id})`))
        .getSQL(),
    )
    .onConflictDoNothing();
}

/**
 * Takes the profile's one sign-in window for `episode`'s ceremony, by one conditional update that
 * wins only while the episode is open at this generation and no other open episode of the same
 * host profile has a live ceremony (unless `takeWindow`: the owner asked for this one). It marks
 * the ceremony `verifying` (the host first checks the saved session) unless it is live already.
 * From then until the host answers, a wall of the same profile on another origin waits for the
 * window (see {@link windowTaken}) instead of ending this ceremony. A start that is lost leaves
 * `verifying`; the maintenance pass finds the host does not know the ceremony and begins it again.
 * @returns whether the episode holds the window now.
 */
export async function claimWindow(ports: Ports, episode: SignInEpisodeRow, options: { takeWindow?: boolean } = {}): Promise<boolean> {
  const claimed = await ports.db
    .update(signInEpisodes)
    .set({
      ceremonyState: sql`CASE WHEN ${inArray(signInEpisodes.ceremonyState, [...LIVE_CEREMONY_STATES])} THEN ${signInEpisodes.ceremonyState} ELSE 'verifying' END`,
    })
    .where(
      and(
        eq(signInEpisodes.id, episode.id),
        eq(signInEpisodes.state, 'open'),
        eq(signInEpisodes.generation, episode.generation),
        options.takeWindow ? undefined : notExists(liveCeremonyElsewhere(ports, episode)),
      ),
    )
    .run();
  return rowsChanged(claimed) === 1;
}
