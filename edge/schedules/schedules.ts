import { Cron } from 'croner';
import { and, desc, eq, isNull, lt, or } from 'drizzle-orm';
import { type CreateScheduleBody, DEFAULT_RUN_DEADLINE_MS, type ScheduleView } from '../../shared/api.ts';
import { canonicalOrigins } from '../../shared/origin.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { messages, type RunRow, runs, type ScheduleRow, schedules } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import { anticipateRunStart } from '../memories/run-anticipation.ts';
import { profileInForce } from '../policy/profile.ts';
import type { Ports } from '../ports.ts';
import { profileRevoked } from '../profiles/bindings.ts';
import { overOpenRunsQuota } from '../quotas/open-runs.ts';

/** One minute, in ms: the resolution of cron schedules. */
const MINUTE_MS = 60_000;

/**
 * Creates an owner schedule (DESIGN.md section 10, ADR-0168): a cron expression (five fields,
 * UTC), the intent, the sealed profile, allowed origins, pinned tool versions, the policy profile
 * and the run deadline (default five minutes).
 * @throws DomainError('invalid_request') for a cron expression that does not parse or a policy
 *   profile that does not exist.
 */
export async function createSchedule(ports: Ports, principal: Principal, body: CreateScheduleBody): Promise<ScheduleRow> {
  try {
    new Cron(body.cron, { timezone: 'UTC', paused: true });
  } catch (error) {
    throw new DomainError('invalid_request', `cron: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (body.cron.trim().split(/\s+/).length !== 5) throw new DomainError('invalid_request', 'cron: five fields (minute hour day month weekday)');
  const policyProfile = body.policy_profile ?? 'default';
  await profileInForce(ports.db, policyProfile);
  const now = ports.clock.now();
  const row: ScheduleRow = {
    id: newId('sch'),
    ownerId: principal.ownerId,
    createdBy: principal.id,
    cron: body.cron.trim(),
    intent: body.intent,
    profileId: body.profile_id,
    origins: canonicalOrigins(body.origins),
    toolVersions: body.tool_versions,
    policyProfile,
    deadlineMs: body.deadline_ms ?? DEFAULT_RUN_DEADLINE_MS,
    enabled: true,
    lastFiredFor: null,
    createdAt: now,
  };
  await ports.db.insert(schedules).values(row);
  return row;
}

/** The owner's schedules, newest first (at most 100). */
export function listSchedules(ports: Ports, principal: Principal): Promise<ScheduleRow[]> {
  return ports.db.select().from(schedules).where(eq(schedules.ownerId, principal.ownerId)).orderBy(desc(schedules.createdAt)).limit(100);
}

/**
 * The cron pass (the Worker's `scheduled` handler, or a scheduler on Deno and Node): queues one
 * run for every enabled schedule due in the minute of `scheduledTime` (epoch ms). Each run is a
 * `scheduled` run with trusted-configuration authority (its intent is a trusted message from the
 * schedule itself), the schedule's pinned versions and policy profile. Idempotent: the run's id is
 * derived from the schedule and the minute, so a repeated pass for the same minute changes nothing.
 * A schedule whose profile the owner revoked queues nothing; nor does one whose owner is at the
 * open-runs quota (that minute's firing is skipped and logged). A schedule that cannot be fired (a
 * database failure) is logged with the pass's request id and left for the next pass, which fires
 * it for the missed minute (see {@link latestDueMinute}); the others still fire. Each queued run's
 * anticipation is decided as it is queued (edge/memories/run-anticipation.ts; the schedule's
 * intent is the owner's).
 * @returns the runs queued by this pass.
 */
export async function fireDueSchedules(ports: Ports, scheduledTime: number): Promise<RunRow[]> {
  const minute = Math.floor(scheduledTime / MINUTE_MS) * MINUTE_MS;
  const candidates = await ports.db
    .select()
    .from(schedules)
    .where(and(eq(schedules.enabled, true), or(isNull(schedules.lastFiredFor), lt(schedules.lastFiredFor, minute))))
    .limit(500);
  const fired: RunRow[] = [];
  for (const schedule of candidates) {
    const dueMinute = latestDueMinute(schedule, minute);
    if (dueMinute === undefined) continue;
    // A revoked profile takes no new runs (ADR-0164 part 3), not even scheduled ones.
    if (await profileRevoked(ports, schedule.ownerId, schedule.profileId)) continue;
    const now = ports.clock.now();
    const run: RunRow = {
      id: `run_${schedule.id.slice('sch_'.length)}_${dueMinute / MINUTE_MS}`,
      ownerId: schedule.ownerId,
      createdBy: schedule.id,
      claimedBy: null,
      profileId: schedule.profileId,
      intent: schedule.intent,
      origins: schedule.origins,
      state: 'queued',
      kind: 'scheduled',
      scheduleId: schedule.id,
      policyProfile: schedule.policyProfile,
      pinnedVersions: schedule.toolVersions,
      claimExpiresAt: null,
      deadlineAt: now + schedule.deadlineMs,
      leaseId: null,
      leaseHostId: null,
      leaseHostUrl: null,
      leaseGeneration: null,
      leaseExpiresAt: null,
      latestRevision: null,
      latestUrl: null,
      reportSummary: null,
      signInAttempts: 0,
      recipeId: null,
      recipeVersion: null,
      recipeHash: null,
      createdAt: now,
      updatedAt: now,
    };
    const messageId = `msg_${run.id.slice('run_'.length)}`;
    // The owner's open-runs quota counts scheduled runs too: over it, this firing queues nothing.
    const overQuota = overOpenRunsQuota(schedule.ownerId, ports.config.quotas.openRunsPerOwner);
    try {
      await ports.db.batch([
        ports.db.insert(runs).values(run),
        ports.db.insert(messages).values({ id: messageId, runId: run.id, principalId: schedule.id, trust: 'trusted', text: schedule.intent, createdAt: now }),
        ports.db.delete(messages).where(and(eq(messages.id, messageId), overQuota)),
        ports.db.delete(runs).where(and(eq(runs.id, run.id), overQuota)),
        ports.db.update(schedules).set({ lastFiredFor: dueMinute }).where(eq(schedules.id, schedule.id)),
      ]);
      if (await ports.db.select({ id: runs.id }).from(runs).where(eq(runs.id, run.id)).get()) {
        fired.push(run);
        // The schedule's intent is the owner's own words; decided before an agent can claim the run.
        await anticipateRunStart(ports, run, 'owner');
      } else console.error(`[${ports.requestId}] schedule ${schedule.id}: its owner has too many runs not yet ended; nothing queued for ${iso(dueMinute)}`);
    } catch (error) {
      // The batch is all or nothing. When the run of this schedule and minute exists, a repeated
      // pass fired it already and nothing changes; any other failure is logged for the next pass.
      const exists = await ports.db.select({ id: runs.id }).from(runs).where(eq(runs.id, run.id)).get();
      if (!exists)
        console.error(
          `[${ports.requestId}] schedule ${schedule.id}: queueing its run for ${iso(dueMinute)} failed; the next pass within ${CATCH_UP_MS / MINUTE_MS} minutes tries again`,
          error,
        );
    }
  }
  return fired;
}

/** How far back a pass looks for a due minute an earlier pass missed (a failure, a late pass), in ms. */
const CATCH_UP_MS = 15 * MINUTE_MS;

/**
 * The minute (epoch ms) a pass for `minute` fires `schedule` for: `minute` itself when the cron is
 * due then; otherwise the latest due minute the passes before missed, no more than 15 minutes back,
 * after the schedule's last firing and not before the minute it was created in. Undefined when
 * there is none. One run a pass: missed minutes are never fired in a burst.
 */
function latestDueMinute(schedule: Pick<ScheduleRow, 'cron' | 'lastFiredFor' | 'createdAt'>, minute: number): number | undefined {
  if (dueAt(schedule.cron, minute)) return minute;
  const earliest = Math.max(minute - CATCH_UP_MS, Math.floor(schedule.createdAt / MINUTE_MS) * MINUTE_MS, (schedule.lastFiredFor ?? -Infinity) + MINUTE_MS);
  for (let missed = minute - MINUTE_MS; missed >= earliest; missed -= MINUTE_MS) {
    if (dueAt(schedule.cron, missed)) return missed;
  }
  return undefined;
}

/** Whether the five-field UTC cron expression fires at `minute` (epoch ms on a minute boundary). */
export function dueAt(cron: string, minute: number): boolean {
  try {
    const next = new Cron(cron, { timezone: 'UTC', paused: true }).nextRun(new Date(minute - 1));
    return next !== null && next.getTime() === minute;
  } catch {
    return false;
  }
}

/** The API view of a schedule. */
export function scheduleView(row: ScheduleRow): ScheduleView {
  return {
    id: row.id,
    cron: row.cron,
    intent: row.intent,
    profile_id: row.profileId,
    origins: row.origins,
    tool_versions: row.toolVersions,
    policy_profile: row.policyProfile,
    deadline_ms: row.deadlineMs,
    enabled: row.enabled,
    created_at: iso(row.createdAt),
  };
}
