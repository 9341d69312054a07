import { and, eq, gt, inArray, ne, sql } from 'drizzle-orm';
import { rowsChanged } from '../db/rows-changed.ts';
import { type RunRow, runs } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { releaseLease } from '../pipeline/lease.ts';
import type { Ports } from '../ports.ts';
import { expireIfPastDeadline } from '../runs/lifecycle.ts';
import { secondsUntil } from './rates.ts';

/** Run states whose lease (or lease reservation) counts as holding a browser; a run waiting for sign-in had its lease interrupted. */
const HOLDING_STATES = ['queued', 'running', 'waiting_for_approval'] as const;

/**
 * Before a call that will need a new lease (the run holds none, or the one it holds has lapsed):
 * reserves a browser for the run by one conditional update of its `lease_expires_at` (for one
 * tool deadline; the dispatch's `lease.acquire` replaces it with the host's expiry), which wins
 * only while no other live run of the owner holds or reserves the same profile and the owner's
 * runs hold fewer than `leasedBrowsersPerOwner`. Calls that arrive together are serialized by the
 * database, so they can never all pass. A holder past its deadline is ended (and its lease
 * released) first, so the next run never waits for its TTL. The host checks the profile again
 * on `lease.acquire` (`profile_in_use`), whatever the database says.
 * @throws DomainError('profile_in_use') naming the holding run, Retry-After until its lease's
 *   expiry; DomainError('quota_exceeded') with Retry-After until the owner's first lease expires.
 */
export async function reserveLease(ports: Ports, run: RunRow): Promise<void> {
  const now = ports.clock.now();
  if (run.leaseId !== null && (run.leaseExpiresAt ?? 0) > now) return;
  const others = (profile?: string) =>
    sql`from runs o where o.owner_id = ${run.ownerId} and o.id <> ${run.id} and o.lease_expires_at > ${now} and o.state in (${sql.join(
      HOLDING_STATES.map((state) => sql`${state}`),
      sql`, `,
    )})${profile === undefined ? sql`` : sql` and o.profile_id = ${profile}`}`;
  const holders = async () =>
    ports.db
      .select()
      .from(runs)
      .where(and(eq(runs.ownerId, run.ownerId), ne(runs.id, run.id), gt(runs.leaseExpiresAt, now), inArray(runs.state, [...HOLDING_STATES])))
      .all();
  for (const holder of await holders()) {
    if (holder.deadlineAt > now) continue;
    const ended = await expireIfPastDeadline(ports, holder);
    await releaseLease(ports, ended);
  }
  const limit = ports.config.quotas.leasedBrowsersPerOwner;
  const reserved = await ports.db
    .update(runs)
    .set({ leaseExpiresAt: sql`max(coalesce(${runs.leaseExpiresAt}, 0), ${now + ports.config.toolDeadlineMs})` })
    .where(and(eq(runs.id, run.id), sql`not exists (select 1 ${others(run.profileId)})`, sql`(select count(*) ${others()}) < ${limit}`))
    .run();
  if (rowsChanged(reserved) === 1) return;
  const live = await holders();
  const onProfile = live.find((holder) => holder.profileId === run.profileId);
  if (onProfile) {
    const until = onProfile.leaseExpiresAt ?? now;
    throw new DomainError(
      'profile_in_use',
      `profile ${run.profileId} is in use by run ${onProfile.id} until ${new Date(until).toISOString()} (or until that run ends)`,
      { run_id: onProfile.id, lease_expires_at: new Date(until).toISOString() },
      { retryAfterS: secondsUntil(now, until) },
    );
  }
  const first = live.length === 0 ? now + 1_000 : Math.min(...live.map((holder) => holder.leaseExpiresAt ?? now));
  throw new DomainError(
    'quota_exceeded',
    `this owner's runs already hold ${live.length} browsers (at most ${limit}); end a run or wait for its lease to lapse`,
    undefined,
    { retryAfterS: secondsUntil(now, first) },
  );
}
