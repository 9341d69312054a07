import { pruneRunArtifacts } from './artifacts/run-artifacts.ts';
import { pruneRunFiles } from './artifacts/run-files.ts';
import { pruneArtifacts } from './artifacts/screenshots.ts';
import { checkFleet } from './fleet/health.ts';
import { retryDueDeliveries } from './notifications/webhooks.ts';
import type { Ports } from './ports.ts';
import { driveDueRecipeRuns } from './recipes/scheduling.ts';
import { fireDueSchedules } from './schedules/schedules.ts';
import { removeOldLiveViewLinks } from './sign-in/live-view.ts';
import { type ReconciliationReport, reconcileSignIns } from './sign-in/maintenance.ts';

/** What one cron pass did: runs queued by schedules, and the sign-in maintenance report. */
export interface CronPassReport {
  readonly queued: number;
  /** Undefined when the maintenance pass failed (it was logged). */
  readonly signIns: ReconciliationReport | undefined;
}

/**
 * The cron pass, the same on Workers (`scheduled`), Deno (`Deno.cron`) and Node (croner): queue
 * the runs of schedules due in the minute of `scheduledTime` (epoch ms), then a check of every
 * browser host of the fleet (`host.status`; issue 32), then the sign-in
 * maintenance pass, the recipe runner (bound runs past their limit while parked end `partial`; up
 * to 8 running or queued bound runs are driven, issue 19), webhook retries, the screenshot retention pass (oldest first, at most 256
 * per pass, past `ARTIFACT_MAX_AGE_HOURS`) and the removal of live-view links expired a day ago. A failure of any part is logged with
 * `ports.requestId` and does not stop the others; the next pass tries again. Never throws.
 */
export async function cronPass(ports: Ports, scheduledTime: number): Promise<CronPassReport> {
  let queued = 0;
  let signIns: ReconciliationReport | undefined;
  try {
    queued = (await fireDueSchedules(ports, scheduledTime)).length;
  } catch (error) {
    console.error(`[${ports.requestId}] cron pass: firing due schedules failed`, error);
  }
  try {
    // The fleet's hosts first: the passes after it place and move profiles by what it found.
    await checkFleet(ports);
  } catch (error) {
    console.error(`[${ports.requestId}] cron pass: checking the browser hosts failed`, error);
  }
  try {
    signIns = await reconcileSignIns(ports);
  } catch (error) {
    console.error(`[${ports.requestId}] cron pass: the sign-in maintenance pass failed`, error);
  }
  try {
    await driveDueRecipeRuns(ports);
  } catch (error) {
    console.error(`[${ports.requestId}] cron pass: driving recipe runs failed`, error);
  }
  try {
    await retryDueDeliveries(ports);
  } catch (error) {
    console.error(`[${ports.requestId}] cron pass: retrying webhook deliveries failed`, error);
  }
  try {
    await pruneArtifacts(ports, scheduledTime);
  } catch (error) {
    console.error(`[${ports.requestId}] cron pass: removing old screenshots failed`, error);
  }
  try {
    await pruneRunArtifacts(ports, scheduledTime);
    await pruneRunFiles(ports, scheduledTime);
  } catch (error) {
    console.error(`[${ports.requestId}] cron pass: removing old run files and artifacts failed`, error);
  }
  try {
    await removeOldLiveViewLinks(ports, scheduledTime);
  } catch (error) {
    console.error(`[${ports.requestId}] cron pass: removing old live-view links failed`, error);
  }
  return { queued, signIns };
}
