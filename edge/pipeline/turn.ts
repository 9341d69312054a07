import { and, desc, eq, gte, isNotNull, sql } from 'drizzle-orm';
import { ANY_URL_SHOWN, canonicalPageUrl } from '../../shared/page-url.ts';
import { callTraits, type ToolInvocation } from '../../shared/tools.ts';
import { messages, type RunRow, signInEpisodes, signInWaits, toolCalls } from '../db/schema.ts';
import type { Authority } from '../policy/decide.ts';
import type { Ports } from '../ports.ts';

/** The proposing turn as the policy sees it (DESIGN.md section 2 and 4, ADR-0168). */
export interface TurnContext {
  readonly authority: Authority;
  /** The turn has received page-derived tool results. */
  readonly tainted: boolean;
  /** Epoch ms at which the turn began: the newest message, or the run's creation. */
  readonly startedAt: number;
}

/**
 * Authority and taint of the run's current turn. Authority comes from the newest message alone:
 * an owner message gives `user` authority, the schedule's own intent message
 * `trusted_configuration`, and an untrusted relayed message none: it cannot borrow an older owner
 * message's authority. Taint is separate: the turn is tainted once any call since the newest
 * message returned page content; observing does not remove authority.
 */
export async function turnContext(ports: Ports, run: RunRow): Promise<TurnContext> {
  const newest = await ports.db
    .select({ trust: messages.trust, principalId: messages.principalId, createdAt: messages.createdAt })
    .from(messages)
    .where(eq(messages.runId, run.id))
    .orderBy(desc(messages.createdAt), desc(sql`rowid`))
    .limit(1)
    .get();
  const startedAt = newest?.createdAt ?? run.createdAt;
  const authority = authorityOf(run, newest);
  const pageResult = await ports.db
    .select({ id: toolCalls.id })
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, run.id), gte(toolCalls.updatedAt, startedAt), isNotNull(toolCalls.result)))
    .limit(1)
    .get();
  return { authority, tainted: pageResult !== undefined, startedAt };
}

/**
 * The authority the newest message of `run` gives its turn: `user` for an owner's message, the
 * schedule's own intent message `trusted_configuration`, and none for an untrusted relayed message
 * or no message at all.
 */
export function authorityOf(run: Pick<RunRow, 'kind' | 'scheduleId'>, newest: { trust: string; principalId: string } | undefined): Authority {
  if (newest?.trust !== 'trusted') return null;
  return run.kind === 'scheduled' && newest.principalId === run.scheduleId ? 'trusted_configuration' : 'user';
}

/**
 * Whether a call's arguments carry references derived from page content (README "Taint"): an
 * act's element reference always does (it was read off an observation); a navigation does when
 * its URL, in canonical form (shared/page-url.ts), is one that page content showed in a result
 * this turn received (or the page showed more URLs than are recorded), unless it is one of the
 * run's own: a target of its earlier navigations, or the page one of its resolved sign-ins was
 * verified against. Observe arguments never do.
 */
export async function carriesPageDerivedReferences(ports: Ports, run: RunRow, invocation: ToolInvocation, turn: TurnContext): Promise<boolean> {
  const traits = callTraits(invocation);
  if (traits.pageReferences === 'always') return true;
  if (traits.pageReferences === 'never' || traits.targetUrl === undefined || !turn.tainted) return false;
  const url = canonicalPageUrl(traits.targetUrl);
  if (url === undefined) return false;
  const contains = (column: typeof toolCalls.shownUrls | typeof toolCalls.ownUrls, ...values: string[]) =>
    sql`exists (select 1 from json_each(${column}) where json_each.value in (${sql.join(
      values.map((value) => sql`${value}`),
      sql`, `,
    )}))`;
  const shown = await ports.db
    .select({ id: toolCalls.id })
    .from(toolCalls)
    .where(
      and(
        eq(toolCalls.runId, run.id),
        gte(toolCalls.updatedAt, turn.startedAt),
        isNotNull(toolCalls.shownUrls),
        contains(toolCalls.shownUrls, url, ANY_URL_SHOWN),
      ),
    )
    .limit(1)
    .get();
  if (shown === undefined) return false;
  const own = await ports.db
    .select({ id: toolCalls.id })
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, run.id), isNotNull(toolCalls.ownUrls), contains(toolCalls.ownUrls, url)))
    .limit(1)
    .get();
  if (own !== undefined) return false;
  return !(await verifiedProtectedPages(ports, run.id)).includes(url);
}

/**
 * The canonical URLs of the pages the run's resolved sign-ins were verified against (ADR-0164
 * part 3): the host's ceremony loaded each of them for the run and proved it signed in, so going
 * back to one after the sign-in is the run's own continuation, not a page's suggestion (no
 * second interruption for one sign-in episode).
 */
async function verifiedProtectedPages(ports: Ports, runId: string): Promise<string[]> {
  const rows = await ports.db
    .select({ url: signInEpisodes.protectedUrl })
    .from(signInWaits)
    .innerJoin(signInEpisodes, eq(signInEpisodes.id, signInWaits.episodeId))
    .where(and(eq(signInWaits.runId, runId), eq(signInWaits.state, 'resolved'), eq(signInEpisodes.state, 'resolved')))
    .limit(16);
  return rows.flatMap((row) => canonicalPageUrl(row.url) ?? []);
}
