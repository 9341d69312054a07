import { and, eq, gt, inArray, isNotNull, ne } from 'drizzle-orm';
import { type RunRow, runs } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { releaseLease } from '../pipeline/lease.ts';
import type { Ports } from '../ports.ts';
import { expireIfPastDeadline } from '../runs/lifecycle.ts';
import { secondsUntil } from './rates.ts';

/**
 * Before a call that will need a new lease (the run holds none, or the one it holds has lapsed):
 * the run's profile must not be leased by another live run of its owner, and the owner must hold
 * fewer than `leasedBrowsersPerOwner` leases. A holder past its deadline is ended (and its lease
 * released) here, so the next run never waits for its TTL. A holder waiting for sign-in does not
 * count: the ceremony interrupted its lease. The host checks the same on `lease.acquire`
 * (`profile_in_use`), whatever the database says.
 * @throws DomainError('profile_in_use') naming the holding run, Retry-After until its lease's
 *   expiry; DomainError('quota_exceeded') with Retry-After until the owner's first lease expires.
 */
export async function assertLeaseAvailable(ports: Ports, run: RunRow): Promise<void> {
  const now = ports.clock.now();
  if (run.leaseId !== null && (run.leaseExpiresAt ?? 0) > now) return;
  const holders = await ports.db
    .select()
    .from(runs)
    .where(
      and(
        eq(runs.ownerId, run.ownerId),
        ne(runs.id, run.id),
        isNotNull(runs.leaseId),
        gt(runs.leaseExpiresAt, now),
        inArray(runs.state, ['queued', 'running', 'waiting_for_approval']),
      ),
    )
    .all();
  const live: RunRow[] = [];
  for (const holder of holders) {
    if (holder.deadlineAt > now) {
      live.push(holder);
      continue;
    }
    const ended = await expireIfPastDeadline(ports, holder);
    await releaseLease(ports, ended);
  }
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
  const limit = ports.config.quotas.leasedBrowsersPerOwner;
  if (live.length >= limit) {
    const first = Math.min(...live.map((holder) => holder.leaseExpiresAt ?? now));
    throw new DomainError(
      'quota_exceeded',
      `this owner's runs already hold ${live.length} browsers (at most ${limit}); end a run or wait for its lease to lapse`,
      undefined,
      {
        retryAfterS: secondsUntil(now, first),
      },
    );
  }
}
