import { and, asc, desc, eq, inArray, sql } from 'drizzle-orm';
import type { CeremonyEventReceipt, NoticeList, ProfileBindingView, SignInList, SignInView } from '../../shared/api.ts';
import { type CeremonyEventClaims, type SignInSignal, verifyCeremonyEvent } from '../../shared/authentication.ts';
import type { CeremonyState } from '../../shared/authentication.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import {
  approvals,
  ceremonyEvents,
  effects,
  notices,
  profileBindings,
  type RunRow,
  runs,
  type SignInEpisodeRow,
  type SignInWaitRow,
  signInEpisodes,
  signInWaits,
  toolCalls,
} from '../db/schema.ts';
import type { HostSession } from '../host/host-session.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { hostProfileId, releaseLease } from './lease.ts';
import { expireIfPastDeadline } from './runs.ts';
import { iso } from './views.ts';

/**
 * Authentication waits and verified resumption (ADR-0164 parts 2-4, DESIGN.md section 8).
 *
 * A call whose answer shows a sign-in wall parks its run in `waiting_for_authentication` with a
 * persisted wait (run, trusted profile binding, question, generation) on the sign-in episode of
 * that owner, profile and origin; repeated detections join the open episode. The host's ceremony
 * (the owner's native sign-in in the headed browser) ends in a signed outcome event; the edge
 * records it and, in one batch, resolves the episode and its waits and requeues their runs. The
 * run then continues with a fresh lease and a fresh read: its lease and revision are cleared, so
 * nothing planned on the old page can be sent, and no message is added on anyone's behalf.
 */

/** Sign-in waits a run may enter without semantic progress in between; the next one ends it. */
export const MAX_SIGN_IN_ATTEMPTS = 3;

/** How long the owner is given to sign in during one ceremony, in ms (15 minutes). */
export const CEREMONY_TIMEOUT_MS = 15 * 60_000;

/** How long the ceremony commands may take, in ms (`ceremony.begin` may first verify a saved session). */
const CEREMONY_CALL_MS = 45_000;

/** Most open episodes one maintenance pass looks at. */
const RECONCILE_BATCH = 50;

/** The origin of an absolute URL, or undefined when it is not one. */
function originOrUndefined(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** Where the sign-in wall was met: the page asking for sign-in, and the page the run wanted. */
export interface SignInWall {
  readonly signal: SignInSignal;
  /** The URL of the page that asks for sign-in (the ceremony shows it to the person). */
  readonly signInUrl: string;
  /** The page the run was after: the navigation's target, or the page before the call. */
  readonly protectedUrl: string;
  readonly toolCallId: string;
}

/**
 * Parks a running run on the sign-in episode for its profile and the wall's origin, opening the
 * episode when none is open, then starts (or re-joins) the host's ceremony and gives the owner
 * exactly one notice for the episode. A run that already entered {@link MAX_SIGN_IN_ATTEMPTS}
 * waits without progress ends instead: `partial` when some write of it succeeded, else
 * `uncertain` (ADR-0164 part 4). A revoked profile ends the run `failed`. Never throws for host
 * trouble: an unreachable host leaves the episode for the maintenance pass to begin again.
 */
export async function parkForSignIn(ports: Ports, run: RunRow, wall: SignInWall): Promise<void> {
  const now = ports.clock.now();
  // The episode is about the site the run was after. A wall on another of the run's origins (an
  // identity provider the app redirected to) is where the person signs in; verification is still
  // made on the page the run was after.
  const protectedOrigin = originOrUndefined(wall.protectedUrl);
  const origin = protectedOrigin !== undefined && run.origins.includes(protectedOrigin) ? protectedOrigin : wall.signal.origin;
  const protectedUrl = origin === protectedOrigin ? wall.protectedUrl : wall.signInUrl;
  const hostProfile = await hostProfileId(run.ownerId, run.profileId);
  const binding = await ports.db
    .select()
    .from(profileBindings)
    .where(and(eq(profileBindings.ownerId, run.ownerId), eq(profileBindings.profileId, run.profileId)))
    .get();
  if (binding?.state === 'revoked') {
    await endRun(ports, run, 'failed', `profile ${run.profileId} was revoked; the sign-in ${origin} asks for cannot happen`);
    return;
  }
  if (run.signInAttempts >= MAX_SIGN_IN_ATTEMPTS) {
    const wrote = await ports.db.select({ id: effects.id }).from(effects).where(and(eq(effects.runId, run.id), eq(effects.state, 'succeeded'))).get();
    await endRun(
      ports,
      run,
      wrote ? 'partial' : 'uncertain',
      `stopped: ${origin} asked for sign-in ${run.signInAttempts + 1} times without progress in between; ${wrote ? 'some actions were carried out before' : 'nothing was carried out'}`,
    );
    return;
  }
  const question = `Sign in to ${origin} in the browser of profile "${run.profileId}" so that run ${run.id} can continue.`;
  const openEpisode = sql`(SELECT e.id FROM sign_in_episodes e WHERE e.owner_id = ${run.ownerId} AND e.profile_id = ${run.profileId} AND e.origin = ${origin} AND e.state = 'open')`;
  const runIsRunning = sql`EXISTS (SELECT 1 FROM runs r WHERE r.id = ${run.id} AND r.state = 'running')`;
  const runParkedNow = sql`EXISTS (SELECT 1 FROM runs r WHERE r.id = ${run.id} AND r.state = 'waiting_for_authentication' AND r.updated_at = ${now})`;
  const [, , parked] = await ports.db.batch([
    ports.db
      .insert(profileBindings)
      .values({ ownerId: run.ownerId, profileId: run.profileId, hostProfileId: hostProfile, state: 'active', createdAt: now })
      .onConflictDoNothing(),
    // A new episode only when none is open (the partial unique index): repeated detections join.
    // Only while the run is still running: a run that left `running` parks nothing.
    ports.db
      .insert(signInEpisodes)
      .select(
        // Every column, in the table's order (drizzle inserts a SELECT as all columns).
        sql`SELECT ${newId('sie')}, ${run.ownerId}, ${run.profileId}, ${hostProfile}, ${origin},
               (SELECT coalesce(max(g.generation), 0) + 1 FROM sign_in_episodes g WHERE g.owner_id = ${run.ownerId} AND g.profile_id = ${run.profileId} AND g.origin = ${origin}),
               ${newId('cer')}, 'open', ${question}, ${wall.signInUrl}, ${protectedUrl}, NULL, NULL, ${now}, NULL, NULL
            WHERE ${runIsRunning}`,
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
      .select(
        sql`SELECT ${newId('siw')}, ${run.id}, e.id, ${run.ownerId}, ${hostProfile}, ${origin}, ${question}, e.generation, ${wall.toolCallId}, 'pending', NULL, NULL, ${now}, NULL
            FROM sign_in_episodes e
            WHERE e.owner_id = ${run.ownerId} AND e.profile_id = ${run.profileId} AND e.origin = ${origin} AND e.state = 'open' AND ${runParkedNow}`,
      )
      .onConflictDoNothing(),
  ]);
  if (rowsChanged(parked) !== 1) return; // the run left `running` meanwhile (cancelled, expired): nothing parks
  const episode = await ports.db
    .select()
    .from(signInEpisodes)
    .where(and(eq(signInEpisodes.ownerId, run.ownerId), eq(signInEpisodes.profileId, run.profileId), eq(signInEpisodes.origin, origin), eq(signInEpisodes.state, 'open')))
    .get();
  if (!episode) return;
  // Joining an episode whose ceremony already ended without a sign-in (timed out, replaced, wrong
  // account): a newer generation opens the window again; the episode keeps its one notice.
  const ended = episode.ceremonyState !== null && (CEREMONY_ENDED_WITHOUT_SIGN_IN as readonly string[]).includes(episode.ceremonyState);
  const begin = ended && !(await windowTaken(ports, episode)) ? ((await nextGeneration(ports, episode)) ?? episode) : episode;
  await beginCeremony(ports, begin);
}

/** Ceremony outcomes after which an open episode has no live ceremony. */
const CEREMONY_ENDED_WITHOUT_SIGN_IN = ['not_verified', 'ended', 'account_mismatch'] as const;

/**
 * Moves an open episode to its next ceremony generation (a new ceremony id) by one conditional
 * update; undefined when it is no longer open at that generation.
 */
async function nextGeneration(ports: Ports, episode: SignInEpisodeRow): Promise<SignInEpisodeRow | undefined> {
  const ceremonyId = newId('cer');
  const changed = await ports.db
    .update(signInEpisodes)
    .set({ generation: episode.generation + 1, ceremonyId, ceremonyState: null })
    .where(and(eq(signInEpisodes.id, episode.id), eq(signInEpisodes.state, 'open'), eq(signInEpisodes.generation, episode.generation)))
    .run();
  return rowsChanged(changed) === 1 ? { ...episode, generation: episode.generation + 1, ceremonyId, ceremonyState: null } : undefined;
}

/** Ends a run that cannot continue, with an explicit summary; one conditional update. */
async function endRun(ports: Ports, run: RunRow, state: 'failed' | 'partial' | 'uncertain', summary: string): Promise<void> {
  const now = ports.clock.now();
  await ports.db
    .update(runs)
    .set({ state, reportSummary: summary, leaseId: null, updatedAt: now })
    .where(and(eq(runs.id, run.id), eq(runs.state, 'running')));
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
    if (!options.takeWindow && (await windowTaken(ports, episode))) throw new WindowTaken();
    session = await ports.host.connect(10_000);
    const answer = await session.call(
      'ceremony.begin',
      {
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
    if (!(error instanceof WindowTaken)) console.error(`sign-in episode ${episode.id}: the ceremony did not begin cleanly; the maintenance pass retries`, error);
  } finally {
    session?.close();
  }
  const now = ports.clock.now();
  await ports.db.run(sql`
    INSERT INTO notices (id, owner_id, kind, episode_id, run_id, text, created_at)
    SELECT ${newId('ntc')}, e.owner_id, 'sign_in_required', e.id,
           (SELECT w.run_id FROM sign_in_waits w WHERE w.episode_id = e.id ORDER BY w.created_at LIMIT 1),
           e.question, ${now}
    FROM sign_in_episodes e
    WHERE e.id = ${episode.id} AND e.state = 'open'
      AND EXISTS (SELECT 1 FROM sign_in_waits w WHERE w.episode_id = e.id)
    ON CONFLICT DO NOTHING`);
}

/** The profile's sign-in window is in use by another episode's ceremony. */
class WindowTaken extends Error {}

/** Ceremony states in which a ceremony holds its profile's window on the host. */
const LIVE_CEREMONY_STATES = ['awaiting_person', 'verifying', 'challenge'] as const;

/** Whether another open episode of the same host profile has a live ceremony (as last reported). */
async function windowTaken(ports: Ports, episode: SignInEpisodeRow): Promise<boolean> {
  const other = await ports.db
    .select({ id: signInEpisodes.id })
    .from(signInEpisodes)
    .where(
      and(
        eq(signInEpisodes.hostProfileId, episode.hostProfileId),
        eq(signInEpisodes.state, 'open'),
        sql`${signInEpisodes.id} <> ${episode.id}`,
        inArray(signInEpisodes.ceremonyState, [...LIVE_CEREMONY_STATES]),
      ),
    )
    .get();
  return other !== undefined;
}

async function noteCeremonyState(ports: Ports, episode: SignInEpisodeRow, state: CeremonyState | undefined): Promise<void> {
  if (state === undefined) return;
  await ports.db
    .update(signInEpisodes)
    .set({ ceremonyState: state })
    .where(and(eq(signInEpisodes.id, episode.id), eq(signInEpisodes.state, 'open'), eq(signInEpisodes.generation, episode.generation)));
}

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
 * nobody waits for any more (its notice resolved, the host's ceremony ended); asks the host for
 * the ceremony's state and applies an outcome event it missed; begins the ceremony again when the
 * host no longer knows it, or a newer generation when the host ended it for another episode of
 * the profile, each only while no other episode's ceremony holds the profile's one window (so
 * episodes of one profile take turns instead of ending each other). At most 50 episodes a pass,
 * the least recently checked first. Never throws for host trouble.
 */
export async function reconcileSignIns(ports: Ports): Promise<ReconciliationReport> {
  // Least recently checked first, so every open episode gets its turn however many there are.
  const open = await ports.db
    .select()
    .from(signInEpisodes)
    .where(eq(signInEpisodes.state, 'open'))
    .orderBy(sql`${signInEpisodes.checkedAt} IS NOT NULL`, asc(signInEpisodes.checkedAt), asc(signInEpisodes.openedAt))
    .limit(RECONCILE_BATCH);
  let resolved = 0;
  let abandoned = 0;
  let restarted = 0;
  for (const episode of open) {
    await ports.db.update(signInEpisodes).set({ checkedAt: ports.clock.now() }).where(eq(signInEpisodes.id, episode.id));
    const waits = await ports.db.select().from(signInWaits).where(and(eq(signInWaits.episodeId, episode.id), eq(signInWaits.state, 'pending')));
    let live = 0;
    for (const wait of waits) if (await fenceIfRunEnded(ports, wait)) live += 1;
    let session: HostSession | undefined;
    try {
      if (live === 0) {
        abandoned += await abandonEpisode(ports, episode);
        session = await ports.host.connect(10_000);
        await session.call('ceremony.end', { ceremony_id: episode.ceremonyId }, 10_000);
        continue;
      }
      session = await ports.host.connect(10_000);
      const status = await session.call('ceremony.status', { ceremony_id: episode.ceremonyId }, 10_000);
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
      }
    } catch (error) {
      if (error instanceof DomainError) console.error(`sign-in episode ${episode.id}: the host's event was refused: ${error.message}`);
      // host trouble: the next pass tries again
    } finally {
      session?.close();
    }
  }
  return { checked: open.length, resolved, abandoned, restarted };
}

/** Fences a pending wait whose run expired or ended; true when the wait is still live. */
async function fenceIfRunEnded(ports: Ports, wait: SignInWaitRow): Promise<boolean> {
  const run = await ports.db.select().from(runs).where(eq(runs.id, wait.runId)).get();
  if (!run) return false;
  const current = await expireIfPastDeadline(ports, run);
  if (current.state === 'waiting_for_authentication') return true;
  await ports.db
    .update(signInWaits)
    .set({ state: 'fenced', fenceReason: current.state === 'cancelled' ? 'cancelled' : current.state === 'deadline_exceeded' ? 'deadline_exceeded' : 'run_ended', endedAt: ports.clock.now() })
    .where(and(eq(signInWaits.id, wait.id), eq(signInWaits.state, 'pending')));
  return false;
}

/** Abandons an open episode with no pending waits, and resolves its notice; 1 when it did. */
async function abandonEpisode(ports: Ports, episode: SignInEpisodeRow): Promise<number> {
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
 * Starts a newer ceremony generation for an open episode (the owner closed the window, or the
 * ceremony timed out): a new ceremony id and generation by one conditional update, then the host
 * is asked to begin it; events of the older generation no longer match anything.
 * @throws DomainError('not_found') for another owner's or an unknown episode;
 *   DomainError('already_decided') when the episode is no longer open.
 */
export async function restartSignIn(ports: Ports, principal: Principal, episodeId: string): Promise<SignInView> {
  const episode = await ownEpisode(ports, principal, episodeId);
  const next = await nextGeneration(ports, episode);
  if (!next) throw new DomainError('already_decided', `sign-in ${episode.id} is ${episode.state}, not open, or was restarted meanwhile`);
  // The owner asked for this one: it takes the profile's window even from another episode.
  await beginCeremony(ports, next, { takeWindow: true });
  return signInView(ports, await ownEpisode(ports, principal, episodeId));
}

async function ownEpisode(ports: Ports, principal: Principal, episodeId: string): Promise<SignInEpisodeRow> {
  const episode = await ports.db.select().from(signInEpisodes).where(eq(signInEpisodes.id, episodeId)).get();
  if (!episode || episode.ownerId !== principal.ownerId) throw new DomainError('not_found', `no sign-in ${episodeId}`);
  return episode;
}

/** The owner's sign-in episodes, newest first (at most 100), optionally of one state. */
export async function listSignIns(ports: Ports, principal: Principal, state?: SignInEpisodeRow['state']): Promise<SignInList> {
  const rows = await ports.db
    .select()
    .from(signInEpisodes)
    .where(and(eq(signInEpisodes.ownerId, principal.ownerId), state ? eq(signInEpisodes.state, state) : undefined))
    .orderBy(desc(signInEpisodes.openedAt))
    .limit(100);
  const waiting = rows.length
    ? await ports.db
        .select({ episodeId: signInWaits.episodeId, runId: signInWaits.runId })
        .from(signInWaits)
        .where(and(inArray(signInWaits.episodeId, rows.map((row) => row.id)), eq(signInWaits.state, 'pending')))
    : [];
  return { sign_ins: rows.map((row) => signInViewOf(row, waiting.filter((w) => w.episodeId === row.id))) };
}

async function signInView(ports: Ports, row: SignInEpisodeRow): Promise<SignInView> {
  const waiting = await ports.db.select({ runId: signInWaits.runId }).from(signInWaits).where(and(eq(signInWaits.episodeId, row.id), eq(signInWaits.state, 'pending')));
  return signInViewOf(row, waiting);
}

/** The API view of an episode with the runs waiting on it. */
function signInViewOf(row: SignInEpisodeRow, waiting: readonly { runId: string }[]): SignInView {
  return {
    id: row.id,
    profile_id: row.profileId,
    origin: row.origin,
    state: row.state,
    generation: row.generation,
    question: row.question,
    ceremony_state: row.ceremonyState,
    waiting_runs: waiting.map((w) => w.runId),
    opened_at: iso(row.openedAt),
    resolved_at: row.resolvedAt === null ? null : iso(row.resolvedAt),
  };
}

/** The owner's notices, newest first (at most 100). */
export async function listNotices(ports: Ports, principal: Principal): Promise<NoticeList> {
  const rows = await ports.db.select().from(notices).where(eq(notices.ownerId, principal.ownerId)).orderBy(desc(notices.createdAt)).limit(100);
  return {
    notices: rows.map((n) => ({
      id: n.id,
      kind: n.kind,
      episode_id: n.episodeId,
      run_id: n.runId,
      text: n.text,
      created_at: iso(n.createdAt),
      resolved_at: n.resolvedAt === null ? null : iso(n.resolvedAt),
    })),
  };
}

/** The run's pending sign-in wait, if it has one. */
export async function pendingWaitOf(ports: Ports, runId: string): Promise<SignInWaitRow | undefined> {
  return ports.db.select().from(signInWaits).where(and(eq(signInWaits.runId, runId), eq(signInWaits.state, 'pending'))).get();
}

/**
 * Revokes the owner's profile binding (ADR-0164 part 3: revocation fences the continuation): in
 * one batch the binding becomes revoked; every run on the profile that has not ended (queued,
 * running, waiting for approval or for sign-in) ends `failed`, with its pending approvals and
 * parked calls cancelled; the profile's open episodes end `revoked` with their notices resolved
 * and their pending waits fenced. A call already being dispatched finishes and is recorded, as on
 * cancellation. Afterwards new runs, schedules and proposals on the profile are refused
 * (`profile_revoked`), and events for it match nothing. Leases are released best effort.
 */
export async function revokeProfile(ports: Ports, principal: Principal, profileId: string): Promise<ProfileBindingView> {
  const now = ports.clock.now();
  const ownerId = principal.ownerId;
  const openEpisodes = sql`(SELECT e.id FROM sign_in_episodes e WHERE e.owner_id = ${ownerId} AND e.profile_id = ${profileId} AND e.state = 'open')`;
  const profileRuns = sql`(SELECT r.id FROM runs r WHERE r.owner_id = ${ownerId} AND r.profile_id = ${profileId})`;
  const active = await ports.db
    .select()
    .from(runs)
    .where(and(eq(runs.ownerId, ownerId), eq(runs.profileId, profileId), inArray(runs.state, [...FENCED_BY_REVOCATION])));
  await ports.db.batch([
    ports.db
      .insert(profileBindings)
      .values({ ownerId, profileId, hostProfileId: await hostProfileId(ownerId, profileId), state: 'revoked', revokedAt: now, createdAt: now })
      .onConflictDoUpdate({ target: [profileBindings.ownerId, profileBindings.profileId], set: { state: 'revoked', revokedAt: now } }),
    ports.db
      .update(runs)
      .set({ state: 'failed', reportSummary: `profile ${profileId} was revoked`, updatedAt: now })
      .where(and(eq(runs.ownerId, ownerId), eq(runs.profileId, profileId), inArray(runs.state, [...FENCED_BY_REVOCATION]))),
    ports.db
      .update(approvals)
      .set({ state: 'cancelled', decidedAt: now })
      .where(and(eq(approvals.state, 'pending'), sql`${approvals.runId} IN ${profileRuns}`)),
    ports.db
      .update(toolCalls)
      .set({ state: 'cancelled', errorCode: 'profile_revoked', errorMessage: `profile ${profileId} was revoked`, updatedAt: now })
      .where(and(eq(toolCalls.state, 'waiting_for_approval'), sql`${toolCalls.runId} IN ${profileRuns}`)),
    ports.db
      .update(signInWaits)
      .set({ state: 'fenced', fenceReason: 'profile_revoked', endedAt: now })
      .where(and(eq(signInWaits.state, 'pending'), sql`${signInWaits.runId} IN ${profileRuns}`)),
    ports.db.update(notices).set({ resolvedAt: now }).where(and(sql`${notices.episodeId} IN ${openEpisodes}`, sql`${notices.resolvedAt} IS NULL`)),
    ports.db
      .update(signInEpisodes)
      .set({ state: 'revoked', resolvedAt: now })
      .where(and(eq(signInEpisodes.ownerId, ownerId), eq(signInEpisodes.profileId, profileId), eq(signInEpisodes.state, 'open'))),
  ]);
  for (const run of active) await releaseLease(ports, run);
  return { profile_id: profileId, state: 'revoked', revoked_at: iso(now), fenced_runs: active.map((run) => run.id) };
}

/** Run states a revocation ends. */
const FENCED_BY_REVOCATION = ['queued', 'running', 'waiting_for_approval', 'waiting_for_authentication'] as const;

/**
 * Refuses work on a revoked profile.
 * @throws DomainError('profile_revoked') when the owner revoked `profileId`.
 */
export async function assertProfileActive(ports: Ports, ownerId: string, profileId: string): Promise<void> {
  if (await profileRevoked(ports, ownerId, profileId)) throw new DomainError('profile_revoked', `profile ${profileId} was revoked`);
}

/** Whether the owner revoked `profileId`. */
export async function profileRevoked(ports: Ports, ownerId: string, profileId: string): Promise<boolean> {
  const binding = await ports.db
    .select({ state: profileBindings.state })
    .from(profileBindings)
    .where(and(eq(profileBindings.ownerId, ownerId), eq(profileBindings.profileId, profileId)))
    .get();
  return binding?.state === 'revoked';
}

/** Sign-in waits and ceremony events of a run, for its passive activity record. */
export async function signInActivity(ports: Ports, runId: string) {
  const waits = await ports.db.select().from(signInWaits).where(eq(signInWaits.runId, runId)).orderBy(asc(signInWaits.createdAt));
  const ceremonyIds = [
    ...new Set(
      (
        await Promise.all(
          [...new Set(waits.map((w) => w.episodeId))].map((id) => ports.db.select({ c: signInEpisodes.ceremonyId }).from(signInEpisodes).where(eq(signInEpisodes.id, id)).get()),
        )
      ).flatMap((row) => (row ? [row.c] : [])),
    ),
  ];
  const events = ceremonyIds.length
    ? await ports.db.select().from(ceremonyEvents).where(inArray(ceremonyEvents.ceremonyId, ceremonyIds)).orderBy(asc(ceremonyEvents.receivedAt))
    : [];
  return { waits, events };
}
