import { sql } from 'drizzle-orm';
import { ACTIVE_RUN_STATES } from '../../shared/api.ts';
import type { Principal } from '../auth/principal.ts';
import { type RunRow, runs } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';

/**
 * Quotas and rate limits per owner and per agent (README "Security"): each is checked before
 * anything is written, and a refusal changes nothing: 429 `rate_limited` (a per-minute rate) or
 * `quota_exceeded` (a standing limit), with `Retry-After` in seconds. The lease limits (a busy
 * profile, browsers per owner) are in lease-availability.ts.
 */

/** The rolling window of the per-minute rates, in ms. */
const MINUTE_MS = 60_000;

/** Seconds until `atMs` (epoch ms), at least 1: a `Retry-After` value. */
export function secondsUntil(now: number, atMs: number): number {
  return Math.max(1, Math.ceil((atMs - now) / 1000));
}

/** A rate refusal: the window frees a place when its oldest entry leaves it. */
function rateLimited(what: string, limit: number, oldest: number | null, now: number): DomainError {
  return new DomainError('rate_limited', `${what}: at most ${limit} per minute; try again later`, undefined, {
    retryAfterS: secondsUntil(now, (oldest ?? now) + MINUTE_MS),
  });
}

/**
 * Before a run is created: the agent's and the owner's runs per minute, and the owner's open runs.
 * One statement.
 * @throws DomainError('rate_limited') with Retry-After when a per-minute rate is used up;
 *   DomainError('quota_exceeded') with Retry-After (60 s: a run must end first) for open runs.
 */
export async function assertRunCreationAllowed(ports: Ports, principal: Principal): Promise<void> {
  const quotas = ports.config.quotas;
  const now = ports.clock.now();
  const since = now - MINUTE_MS;
  const active = sql.join(
    ACTIVE_RUN_STATES.map((state) => sql`${state}`),
    sql`, `,
  );
  const counts = await ports.db
    .select({
      byPrincipal: sql<number>`(select count(*) from ${runs} where ${runs.createdBy} = ${principal.id} and ${runs.createdAt} > ${since})`,
      byPrincipalOldest: sql<
        number | null
      >`(select min(${runs.createdAt}) from ${runs} where ${runs.createdBy} = ${principal.id} and ${runs.createdAt} > ${since})`,
      byOwner: sql<number>`(select count(*) from ${runs} where ${runs.ownerId} = ${principal.ownerId} and ${runs.createdAt} > ${since})`,
      byOwnerOldest: sql<
        number | null
      >`(select min(${runs.createdAt}) from ${runs} where ${runs.ownerId} = ${principal.ownerId} and ${runs.createdAt} > ${since})`,
      open: sql<number>`(select count(*) from ${runs} where ${runs.ownerId} = ${principal.ownerId} and ${runs.state} in (${active}))`,
    })
    .from(sql`(select 1)`)
    .get();
  if (!counts) return;
  if (principal.kind === 'agent' && counts.byPrincipal >= quotas.runsPerMinutePerAgent) {
    throw rateLimited('runs created by this agent', quotas.runsPerMinutePerAgent, counts.byPrincipalOldest, now);
  }
  if (counts.byOwner >= quotas.runsPerMinutePerOwner) throw rateLimited('runs created for this owner', quotas.runsPerMinutePerOwner, counts.byOwnerOldest, now);
  if (counts.open >= quotas.openRunsPerOwner) {
    throw new DomainError(
      'quota_exceeded',
      `this owner has ${counts.open} runs not yet ended (at most ${quotas.openRunsPerOwner}); end or cancel one first`,
      undefined,
      {
        retryAfterS: 60,
      },
    );
  }
}

/**
 * Before a proposal is looked at (so a flood of malformed proposals is limited too): the agent's
 * and the run's owner's proposals per minute. One statement.
 * @throws DomainError('rate_limited') with Retry-After.
 */
export async function assertProposalAllowed(ports: Ports, principal: Principal, run: RunRow): Promise<void> {
  const quotas = ports.config.quotas;
  const now = ports.clock.now();
  const since = now - MINUTE_MS;
  // Literal column names: drizzle renders interpolated columns unqualified, ambiguous in a join.
  const agentCalls = sql`from tool_calls where tool_calls.principal_id = ${principal.id} and tool_calls.created_at > ${since}`;
  const ownerCalls = sql`from tool_calls join runs on runs.id = tool_calls.run_id where runs.owner_id = ${run.ownerId} and tool_calls.created_at > ${since}`;
  const counts = await ports.db
    .select({
      byPrincipal: sql<number>`(select count(*) ${agentCalls})`,
      byPrincipalOldest: sql<number | null>`(select min(tool_calls.created_at) ${agentCalls})`,
      byOwner: sql<number>`(select count(*) ${ownerCalls})`,
      byOwnerOldest: sql<number | null>`(select min(tool_calls.created_at) ${ownerCalls})`,
    })
    .from(sql`(select 1)`)
    .get();
  if (!counts) return;
  if (counts.byPrincipal >= quotas.proposalsPerMinutePerAgent) {
    throw rateLimited('proposals by this agent', quotas.proposalsPerMinutePerAgent, counts.byPrincipalOldest, now);
  }
  if (counts.byOwner >= quotas.proposalsPerMinutePerOwner) {
    throw rateLimited("proposals on this owner's runs", quotas.proposalsPerMinutePerOwner, counts.byOwnerOldest, now);
  }
}
