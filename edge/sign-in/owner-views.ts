import { and, asc, desc, eq, inArray, isNotNull, sql } from 'drizzle-orm';
import type { NoticeList, SignInList, SignInView } from '../../shared/api.ts';
import type { SignInReason } from '../../shared/authentication.ts';
import type { Principal } from '../auth/principal.ts';
import { ceremonyEvents, notices, type SignInEpisodeRow, type SignInWaitRow, signInEpisodes, signInWaits } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { beginCeremony, nextGeneration } from './ceremony.ts';

/** What the owner sees and does about sign-ins: episodes, restarts, notices, a run's wait. */

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
        .select({ episodeId: signInWaits.episodeId, runId: signInWaits.runId, reasons: signInWaits.reasons, createdAt: signInWaits.createdAt })
        .from(signInWaits)
        .where(
          and(
            inArray(
              signInWaits.episodeId,
              rows.map((row) => row.id),
            ),
            // A literal, not a bound parameter: the 100 episode ids already use D1's 100 binds.
            sql`${signInWaits.state} = 'pending'`,
          ),
        )
    : [];
  const routes = await visitedOriginsOf(
    ports,
    rows.map((row) => row.ceremonyId),
  );
  return {
    sign_ins: rows.map((row) =>
      signInViewOf(
        row,
        waiting.filter((w) => w.episodeId === row.id),
        routes.get(row.ceremonyId) ?? [],
      ),
    ),
  };
}

async function signInView(ports: Ports, row: SignInEpisodeRow): Promise<SignInView> {
  const waiting = await ports.db
    .select({ runId: signInWaits.runId, reasons: signInWaits.reasons, createdAt: signInWaits.createdAt })
    .from(signInWaits)
    .where(and(eq(signInWaits.episodeId, row.id), eq(signInWaits.state, 'pending')));
  const routes = await visitedOriginsOf(ports, [row.ceremonyId]);
  return signInViewOf(row, waiting, routes.get(row.ceremonyId) ?? []);
}

/**
 * Where the person's window went in each of `ceremonyIds` (at most 100: one bound parameter
 * each), from the newest of its outcome events that said; ceremonies without one are absent.
 */
async function visitedOriginsOf(ports: Ports, ceremonyIds: readonly string[]): Promise<Map<string, string[]>> {
  if (ceremonyIds.length === 0) return new Map();
  const events = await ports.db
    .select({ ceremonyId: ceremonyEvents.ceremonyId, visitedOrigins: ceremonyEvents.visitedOrigins })
    .from(ceremonyEvents)
    .where(and(inArray(ceremonyEvents.ceremonyId, [...ceremonyIds]), isNotNull(ceremonyEvents.visitedOrigins)))
    .orderBy(asc(ceremonyEvents.receivedAt));
  return new Map(events.map((event) => [event.ceremonyId, event.visitedOrigins ?? []]));
}

/**
 * The way a sign-in went, in words for the owner (DESIGN.md section 18), from the origins its
 * window visited: the hosts it went through after the site's own, then "back" when it came back
 * to `origin`, e.g. `accounts.example → mfa.example → back`; "stayed on <host>" when it never
 * left; empty when nothing was recorded.
 */
export function signInRouteInWords(origin: string, visited: readonly string[]): string {
  const site = origin.toLowerCase();
  const hostOf = (o: string): string => {
    try {
      return new URL(o).host;
    } catch {
      return o;
    }
  };
  if (visited.length === 0) return '';
  if (visited.every((o) => o === site)) return `stayed on ${hostOf(site)}`;
  const start = visited[0] === site ? 1 : 0;
  const steps = visited.slice(start).map((o, index, all) => (o === site && index === all.length - 1 ? 'back' : hostOf(o)));
  return steps.join(' → ');
}

/** The API view of an episode with the runs waiting on it (and the newest wait's reasons). */
function signInViewOf(
  row: SignInEpisodeRow,
  waiting: readonly { runId: string; reasons: SignInReason[]; createdAt: number }[],
  visitedOrigins: readonly string[],
): SignInView {
  const newest = waiting.reduce<(typeof waiting)[number] | undefined>(
    (latest, wait) => (latest === undefined || wait.createdAt > latest.createdAt ? wait : latest),
    undefined,
  );
  return {
    id: row.id,
    profile_id: row.profileId,
    origin: row.origin,
    state: row.state,
    generation: row.generation,
    question: row.question,
    ceremony_state: row.ceremonyState,
    waiting_runs: waiting.map((w) => w.runId),
    reasons: newest?.reasons ?? [],
    visited_origins: [...visitedOrigins],
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
  return ports.db
    .select()
    .from(signInWaits)
    .where(and(eq(signInWaits.runId, runId), eq(signInWaits.state, 'pending')))
    .get();
}
