import { and, desc, eq } from 'drizzle-orm';
import type { SignInSignal } from '../../shared/authentication.ts';
import { originOf, withinOrigins } from '../../shared/origin.ts';
import { canonicalPageUrl } from '../../shared/page-url.ts';
import { returnUrlOf } from '../../shared/sign-in-return.ts';
import { type RunRow, signInEpisodes, signInWaits } from '../db/schema.ts';
import type { Ports } from '../ports.ts';

/** Where a call met a sign-in wall, as dispatch knows it. */
export interface WallMet {
  /** The target of a `browser.navigate`, when the call was one. */
  readonly navigationTarget: string | undefined;
  /** The URL of the page that asks for sign-in. */
  readonly signInUrl: string;
  readonly signal: SignInSignal;
  /** The page the run was on before the call (null before its first page). */
  readonly pageBefore: string | null;
}

/**
 * The page the run was after, which verification loads to prove the sign-in (issue 17; ADR-0164
 * part 3), first found of:
 * 1. the target of a `browser.navigate`;
 * 2. the return URL the sign-in page carries (`next`, `returnTo`, `RelayState`, ...; see
 *    shared/sign-in-return.ts), within the run's origins;
 * 3. the document the call asked for that a redirect took to the sign-in page (the host's
 *    `requested_url`), within the run's origins and not the page before the call;
 * 4. the last protected URL the run reached on that origin: the protected page of its latest
 *    verified sign-in there;
 * 5. the sign-in page itself (verification then concludes only with a definition, or when the
 *    site shows that URL signed in).
 * Never the page the run could read before the wall (a public page proves nothing: a clean
 * control load reaches it too).
 */
export async function protectedPageOf(ports: Ports, run: RunRow, wall: WallMet): Promise<string> {
  if (wall.navigationTarget !== undefined) return wall.navigationTarget;
  const back = returnUrlOf(wall.signInUrl, run.origins);
  if (back !== undefined) return back;
  const requested = wall.signal.requested_url;
  if (
    requested !== undefined &&
    withinOrigins(requested, run.origins) &&
    !sameDocument(requested, wall.pageBefore) &&
    !sameDocument(requested, wall.signInUrl)
  ) {
    return requested;
  }
  const reached = await lastProtectedUrl(ports, run.id, wall.signal.origin);
  if (reached !== undefined && !sameDocument(reached, wall.pageBefore)) return reached;
  return wall.signInUrl;
}

/** The protected URL of the run's latest verified sign-in on `origin`, if any. */
async function lastProtectedUrl(ports: Ports, runId: string, origin: string): Promise<string | undefined> {
  const row = await ports.db
    .select({ protectedUrl: signInEpisodes.protectedUrl })
    .from(signInWaits)
    .innerJoin(signInEpisodes, eq(signInEpisodes.id, signInWaits.episodeId))
    .where(and(eq(signInWaits.runId, runId), eq(signInEpisodes.origin, origin), eq(signInEpisodes.state, 'resolved')))
    .orderBy(desc(signInEpisodes.resolvedAt))
    .get();
  return row?.protectedUrl !== undefined && originOf(row.protectedUrl) === origin ? row.protectedUrl : undefined;
}

/** The same http(s) document (shared/page-url.ts `canonicalPageUrl`: fragments ignored); false when either is none. */
function sameDocument(a: string, b: string | null): boolean {
  const page = b === null ? undefined : canonicalPageUrl(b);
  return page !== undefined && canonicalPageUrl(a) === page;
}

/** The run's latest resolved sign-in wait and the page it protected, for a resumption to go back to. */
export interface ResolvedSignIn {
  readonly waitId: string;
  readonly protectedUrl: string;
}

/**
 * The run's most recently created sign-in wait that resolved (the owner's sign-in was verified),
 * with the protected page of its episode; undefined when the run never had one. A resumption of a
 * recipe-bound run goes back there (ADR-0164 part 3).
 */
export async function latestResolvedSignIn(ports: Ports, runId: string): Promise<ResolvedSignIn | undefined> {
  return ports.db
    .select({ waitId: signInWaits.id, protectedUrl: signInEpisodes.protectedUrl })
    .from(signInWaits)
    .innerJoin(signInEpisodes, eq(signInEpisodes.id, signInWaits.episodeId))
    .where(and(eq(signInWaits.runId, runId), eq(signInWaits.state, 'resolved')))
    .orderBy(desc(signInWaits.createdAt))
    .limit(1)
    .get();
}
