import { and, eq, gt, sql } from 'drizzle-orm';
import type { CallPhases } from '../../shared/api.ts';
import type { Observation, OmittedObservation } from '../../shared/observation.ts';
import { canonicalPageUrl, shownUrlsOf } from '../../shared/page-url.ts';
import { changedItsRow } from '../db/rows-changed.ts';
import { grants, grantUses, type RunRow, runs, type ToolCallRow, toolCalls } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import type { Ports, RunResult } from '../ports.ts';
import { BLANK_PAGE, type DispatchOutcome } from './dispatch-outcome.ts';
import { projectObservation } from './projection.ts';

/**
 * Records how a dispatch ended in one batch, only while the call is still `dispatching`: the
 * call's state, result (whole, or the omission marker past {@link MAX_STORED_RESULT_BYTES}),
 * error and phases (dispatch, settle, postcondition); the run's latest page; a grant use given
 * back when the host guarantees nothing was sent. A write's effect ends in the call's state
 * (`finished_at` its update time) in the call's own statement, by the database's trigger
 * `effects_finish_with_their_call` (drizzle/0022_decision_and_outcome_triggers.sql). A result
 * that cannot be stored still leaves the outcome recorded (and the effect with it).
 * @param startedAt epoch ms at which the dispatch began.
 * @returns the call row as stored afterwards.
 */
export async function recordOutcome(
  ports: Ports,
  run: RunRow,
  call: ToolCallRow,
  outcome: DispatchOutcome,
  startedAt: number,
  isWrite: boolean,
): Promise<ToolCallRow> {
  const now = ports.clock.now();
  const phases: CallPhases = {
    ...(call.phases as CallPhases),
    dispatch: {
      started_at: iso(startedAt),
      finished_at: iso(now),
      elapsed_ms: now - startedAt,
      outcome: outcome.dispatch,
      ...(outcome.leaseGeneration !== undefined ? { lease_generation: outcome.leaseGeneration } : {}),
      ...(outcome.hostId !== undefined ? { host_id: outcome.hostId } : {}),
    },
    ...(outcome.settle ? { settle: outcome.settle } : {}),
    // The operator's record keeps what the page tried, whatever version the agent reads.
    ...(outcome.observation?.blocked ? { blocked: outcome.observation.blocked } : {}),
    ...(outcome.observation?.dialogs ? { dialogs: outcome.observation.dialogs } : {}),
    ...(outcome.condition
      ? { postcondition: { status: outcome.condition.status, observations: outcome.condition.observations, elapsed_ms: outcome.condition.elapsed_ms } }
      : {}),
  };
  const update = {
    state: outcome.state,
    result: storable(outcome.observation),
    shownUrls: outcome.observation ? shownUrlsOf(outcome.observation) : null,
    ownUrls: ownUrlsOf(call, outcome),
    errorCode: outcome.error?.code ?? null,
    errorMessage: outcome.error?.message ?? null,
    retryable: outcome.retryable,
    phases,
    updatedAt: now,
  };
  // Where the page is now; a blank page (an act that emptied the page, say) is never the run's page.
  const shown = outcome.observation ?? outcome.left;
  const page = shown && shown.url !== BLANK_PAGE ? shown : undefined;
  // A renewal recorded with the outcome: only while the run still holds that lease.
  const renewal = outcome.leaseExpiry;
  const leaseExpiresAt = renewal
    ? { leaseExpiresAt: sql<number | null>`case when ${runs.leaseId} = ${renewal.leaseId} then ${renewal.expiresAtMs} else ${runs.leaseExpiresAt} end` }
    : {};
  const refunds = refundStatements(ports, call, outcome, isWrite);
  const statements = [
    ...refunds,
    ports.db
      .update(toolCalls)
      .set(update)
      .where(and(eq(toolCalls.id, call.id), eq(toolCalls.state, 'dispatching'))),
    ...(page !== undefined
      ? [
          ports.db
            .update(runs)
            .set({
              latestRevision: page.revision,
              latestUrl: page.url,
              // Semantic progress (ADR-0164 part 4): a write that went through with no sign-in
              // wall after it. Reads do not count: the fresh read every resumption starts with
              // is revision churn, not progress.
              ...(isWrite && outcome.state === 'succeeded' && !outcome.signIn ? { signInAttempts: 0 } : {}),
              ...leaseExpiresAt,
            })
            .where(eq(runs.id, run.id)),
        ]
      : renewal
        ? [ports.db.update(runs).set(leaseExpiresAt).where(eq(runs.id, run.id))]
        : []),
  ] as const;
  try {
    const results = await ports.db.batch(statements as unknown as Parameters<typeof ports.db.batch>[0]);
    // The call row is what this batch made it, unless something else moved it first.
    if (changedItsRow(results[refunds.length] as RunResult)) return { ...call, ...update };
  } catch (error) {
    // The outcome must be recorded whatever the result looked like: keep the state, drop the rest.
    console.error(`[${ports.requestId}] recording the outcome of ${call.id} failed; recording it without its result`, error);
    // One statement: the effect follows the call by trigger, as in the batch above.
    await ports.db
      .update(toolCalls)
      .set({
        state: outcome.state,
        result: null,
        errorCode: outcome.error?.code ?? null,
        errorMessage: outcome.error?.message ?? null,
        retryable: outcome.retryable,
        updatedAt: now,
      })
      .where(and(eq(toolCalls.id, call.id), eq(toolCalls.state, 'dispatching')));
  }
  return (await ports.db.select().from(toolCalls).where(eq(toolCalls.id, call.id)).get()) ?? { ...call, ...update };
}

/**
 * A grant use given back (README "Confinement"): a write that ended `failed` is one the host
 * guarantees it never carried out (`target_changed`, `lease_lost`, `host_unavailable` before
 * dispatch, any code of `NOT_SENT`; see `classifyFailure`), so the grant that covered it is
 * charged nothing. A write that may have happened (`uncertain`, `succeeded`) stays charged. Runs
 * first in the outcome's batch, only while the call is still `dispatching` and its use is still
 * recorded, so a use is never given back twice.
 */
function refundStatements(ports: Ports, call: ToolCallRow, outcome: DispatchOutcome, isWrite: boolean) {
  const grantId = (call.phases as CallPhases).decision?.grant_id;
  if (!isWrite || outcome.state !== 'failed' || grantId === undefined) return [];
  const stillOpen = sql`exists (select 1 from ${toolCalls} where ${toolCalls.id} = ${call.id} and ${toolCalls.state} = 'dispatching')`;
  const charged = sql`exists (select 1 from ${grantUses} where ${grantUses.toolCallId} = ${call.id})`;
  return [
    ports.db
      .update(grants)
      .set({ uses: sql`${grants.uses} - 1` })
      .where(and(eq(grants.id, grantId), gt(grants.uses, 0), stillOpen, charged)),
    ports.db.delete(grantUses).where(and(eq(grantUses.toolCallId, call.id), stillOpen)),
  ];
}

/**
 * The canonical URLs that are the run's own after this call (README "Taint"): a navigation's
 * target, once it was dispatched. Not the URL a page ended on: a page sets its own URL
 * (`history.replaceState`), so that would let it make any URL the run's own. Null when none.
 */
function ownUrlsOf(call: ToolCallRow, outcome: DispatchOutcome): string[] | null {
  const target = call.tool === 'browser.navigate' ? (call.arguments as { url?: unknown }).url : undefined;
  if (typeof target !== 'string' || outcome.dispatch === 'not_sent') return null;
  const canonical = canonicalPageUrl(target);
  return canonical === undefined ? null : [canonical];
}

/** Largest observation stored with a call, in bytes of JSON (D1 rows are limited to 2 MB). */
export const MAX_STORED_RESULT_BYTES = 1024 * 1024;

/** The observation as it can be stored: whole, or the explicit omission marker when too large. */
function storable(observation: Observation | null): Observation | OmittedObservation | null {
  if (observation === null) return null;
  return projectObservation(observation, MAX_STORED_RESULT_BYTES);
}
