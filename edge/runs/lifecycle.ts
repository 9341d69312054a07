import { and, eq, inArray, isNull, notExists, type SQL } from 'drizzle-orm';
import type { BatchItem } from 'drizzle-orm/batch';
import { ACTIVE_RUN_STATES, type CreateRunBody, DEFAULT_RUN_DEADLINE_MS, type MessageView, type ReportBody, TERMINAL_RUN_STATES } from '../../shared/api.ts';
import { MAX_PENDING_SUGGESTIONS } from '../../shared/memories.ts';
import { canonicalOrigins } from '../../shared/origin.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { messages, type RunRow, recipeProgress, runs, toolCalls } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import { suggestionStatements } from '../memories/suggestions.ts';
import { notifyOwner } from '../notifications/webhooks.ts';
import { releaseLease } from '../pipeline/lease.ts';
import type { Ports, RunResult } from '../ports.ts';
import { assertProfileActive } from '../profiles/bindings.ts';
import { overOpenRunsQuota } from '../quotas/open-runs.ts';
import { admitRunCreation } from '../quotas/rates.ts';
import { selectRecipe } from '../recipes/catalog.ts';
import { recipeProgressStatement } from '../recipes/progress.ts';
import { releaseEpisodesOf } from '../sign-in/release.ts';
import { fenceRunStatements } from './fence.ts';

/**
 * A run's life (DESIGN.md section 10): creation, loading, the deadline, the agent's hold, turns,
 * the final report and cancellation. Every state change is one conditional update or one batch.
 */

/**
 * Creates a run for the caller's owner (`profile_revoked` when the owner revoked the profile;
 * `rate_limited` past the per-minute rates, see `admitRunCreation`; `quota_exceeded` with
 * Retry-After when the owner would have more than `openRunsPerOwner` runs not yet ended). An agent that creates a run holds it (`running`, claimed
 * by that agent); a run the owner creates is `queued` until an agent's first proposal claims it.
 * The intent is recorded as the run's first message, trusted only when the owner wrote it.
 */
export async function createRun(ports: Ports, principal: Principal, body: CreateRunBody): Promise<RunRow> {
  if (body.fields !== undefined && principal.kind !== 'owner') {
    throw new DomainError('invalid_request', "fields: only the owner's own message carries named fields; an agent relays text only");
  }
  await assertProfileActive(ports, principal.ownerId, body.profile_id);
  await admitRunCreation(ports, principal);
  const origins = canonicalOrigins(body.origins);
  // A reviewed recipe is selected only for the owner's own message (issue 19).
  const recipe = principal.kind === 'owner' ? await selectRecipe(ports, body.intent, origins, body.fields) : undefined;
  const now = ports.clock.now();
  const row: RunRow = {
    id: newId('run'),
    ownerId: principal.ownerId,
    createdBy: principal.id,
    claimedBy: principal.kind === 'agent' ? principal.id : null,
    profileId: body.profile_id,
    intent: body.intent,
    origins,
    state: principal.kind === 'agent' ? 'running' : 'queued',
    kind: 'interactive',
    scheduleId: null,
    policyProfile: 'default',
    pinnedVersions: null,
    claimExpiresAt: principal.kind === 'agent' ? now + ports.config.claimTtlMs : null,
    latestUrl: null,
    deadlineAt: now + (body.deadline_ms ?? DEFAULT_RUN_DEADLINE_MS),
    leaseId: null,
    leaseHostId: null,
    leaseHostUrl: null,
    leaseGeneration: null,
    leaseExpiresAt: null,
    latestRevision: null,
    reportSummary: null,
    signInAttempts: 0,
    recipeId: recipe?.row.id ?? null,
    recipeVersion: recipe?.row.version ?? null,
    recipeHash: recipe?.row.hash ?? null,
    createdAt: now,
    updatedAt: now,
  };
  const messageId = newId('msg');
  // The open-runs quota is checked where the run is written (see overOpenRunsQuota).
  const overQuota = overOpenRunsQuota(principal.ownerId, ports.config.quotas.openRunsPerOwner);
  await ports.db.batch([
    ports.db.insert(runs).values(row),
    ports.db.insert(messages).values({
      id: messageId,
      runId: row.id,
      principalId: principal.id,
      trust: principal.kind === 'owner' ? 'trusted' : 'untrusted',
      text: body.intent,
      fields: body.fields ?? null,
      createdAt: now,
    }),
    ...(recipe
      ? [recipeProgressStatement(ports, row, recipe.body), ports.db.delete(recipeProgress).where(and(eq(recipeProgress.runId, row.id), overQuota))]
      : []),
    ports.db.delete(messages).where(and(eq(messages.id, messageId), overQuota)),
    ports.db.delete(runs).where(and(eq(runs.id, row.id), overQuota)),
  ]);
  const created = await ports.db.select({ id: runs.id }).from(runs).where(eq(runs.id, row.id)).get();
  if (!created) {
    throw new DomainError(
      'quota_exceeded',
      `this owner already has ${ports.config.quotas.openRunsPerOwner} runs not yet ended; end or cancel one first`,
      undefined,
      {
        retryAfterS: 60,
      },
    );
  }
  return row;
}

/**
 * Loads a run the caller may see (same owner).
 * @throws DomainError('not_found') for an unknown run or another owner's run (no existence leak).
 */
export async function loadRun(ports: Ports, principal: Principal, runId: string): Promise<RunRow> {
  const row = await ports.db.select().from(runs).where(eq(runs.id, runId)).get();
  if (!row || row.ownerId !== principal.ownerId) throw new DomainError('not_found', `no run ${runId}`);
  return expireIfPastDeadline(ports, row);
}

/**
 * Moves a run whose deadline has passed to `deadline_exceeded` (one conditional update, with its
 * parked approvals and calls cancelled and its sign-in wait fenced in the same batch), releases its
 * lease after the answer (`ports.background`), ends the sign-in episode it waited on when no other
 * run waits on it (see `releaseEpisodesOf`), and returns the current row.
 */
export async function expireIfPastDeadline(ports: Ports, row: RunRow): Promise<RunRow> {
  const now = ports.clock.now();
  if (now < row.deadlineAt || !(ACTIVE_RUN_STATES as readonly string[]).includes(row.state)) return row;
  const [expired] = await ports.db.batch(fenceRunStatements(ports.db, { runId: row.id }, { reason: 'deadline_exceeded', endState: 'deadline_exceeded', now }));
  const current = (await ports.db.select().from(runs).where(eq(runs.id, row.id)).get()) ?? row;
  // The run ended: its browser is free at once, not when the lease's TTL runs out.
  if (rowsChanged(expired) === 1 && current.leaseId !== null) ports.background(`release the lease of ${row.id}`, () => releaseLease(ports, current));
  // Nor does the sign-in it waited for hold a browser once nobody waits on it (issue 32).
  if (rowsChanged(expired) === 1) await releaseEpisodesOf(ports, row.id);
  if (rowsChanged(expired) === 1) notifyOwner(ports, row.ownerId, 'run_ended', { run_id: row.id, state: 'deadline_exceeded' });
  return current;
}

/**
 * Makes sure the calling agent holds the run and that it is running, and extends its claim once
 * less than half of `claimTtlMs` is left (a claim with more left is this agent's until then). A
 * `queued` run is claimed, and a running run whose claim expired may be taken over, each with one
 * conditional update, so two agents can never both win (DESIGN.md section 10). A run bound to
 * a reviewed recipe is held only by the recipe runner (issue 19).
 * @throws DomainError('run_not_active') when the run is not running or queued;
 *   DomainError('forbidden') when another agent holds an unexpired claim, or an agent asks for a
 *   recipe-bound run.
 */
export async function holdRun(ports: Ports, principal: Principal, run: RunRow): Promise<RunRow> {
  if (run.recipeId !== null && principal.kind !== 'recipe_runner') {
    throw new DomainError('forbidden', `run ${run.id} is carried out by the reviewed recipe ${run.recipeId}; no agent acts on it`);
  }
  const now = ports.clock.now();
  const claimExpiresAt = now + ports.config.claimTtlMs;
  if (run.state === 'queued') {
    const claimed = await ports.db
      .update(runs)
      .set({ state: 'running', claimedBy: principal.id, claimExpiresAt, updatedAt: now })
      .where(and(eq(runs.id, run.id), eq(runs.state, 'queued')))
      .run();
    if (rowsChanged(claimed) !== 1) return holdRun(ports, principal, await loadRun(ports, principal, run.id));
    return { ...run, state: 'running', claimedBy: principal.id, claimExpiresAt, updatedAt: now };
  }
  if (run.state !== 'running') throw new DomainError('run_not_active', `the run is ${run.state}, not running`);
  if (run.claimedBy !== null && run.claimedBy !== principal.id && (run.claimExpiresAt ?? 0) > now) {
    throw new DomainError('forbidden', 'another agent holds this run');
  }
  // Held by this principal with more than half its time left: nobody else can take it before
  // then, so it is extended only when it gets short (one write saved per call).
  if (run.claimedBy === principal.id && (run.claimExpiresAt ?? 0) - now > ports.config.claimTtlMs / 2) return run;
  const held = await ports.db
    .update(runs)
    .set({ claimedBy: principal.id, claimExpiresAt, updatedAt: now })
    .where(and(eq(runs.id, run.id), eq(runs.state, 'running'), run.claimedBy === null ? isNull(runs.claimedBy) : eq(runs.claimedBy, run.claimedBy)))
    .run();
  if (rowsChanged(held) !== 1) return holdRun(ports, principal, await loadRun(ports, principal, run.id));
  return { ...run, claimedBy: principal.id, claimExpiresAt, updatedAt: now };
}

/**
 * Records a message on a run: trusted when the owner wrote it, untrusted when an agent relays it.
 * @throws DomainError('run_not_active') on a finished run; DomainError('forbidden') for an agent's
 *   message on a recipe-bound run.
 */
export async function addMessage(ports: Ports, principal: Principal, run: RunRow, text: string): Promise<MessageView> {
  if (TERMINAL_RUN_STATES.includes(run.state)) throw new DomainError('run_not_active', `the run is ${run.state}`);
  // A relayed message would take the owner's authority from a recipe-bound run's turn (issue 19).
  if (run.recipeId !== null && principal.kind !== 'owner') {
    throw new DomainError('forbidden', `run ${run.id} is carried out by the reviewed recipe ${run.recipeId}; only its owner adds messages to it`);
  }
  const now = ports.clock.now();
  const row = {
    id: newId('msg'),
    runId: run.id,
    principalId: principal.id,
    trust: principal.kind === 'owner' ? ('trusted' as const) : ('untrusted' as const),
    text,
    createdAt: now,
  };
  await ports.db.insert(messages).values(row);
  return { id: row.id, run_id: run.id, trust: row.trust, text, created_at: iso(now) };
}

/** What a report did: the ended run, and how many of the memories it proposed were kept as suggestions. */
export interface ReportedRun {
  readonly run: RunRow;
  /** Memories the report proposed (`memories`, at most 8). */
  readonly proposedMemories: number;
  /** Of those, how many became pending suggestions (the rest did not fit the owner's 50 pending). */
  readonly keptSuggestions: number;
}

/**
 * Ends a running run with the agent's tool-free final report: one batch whose update only wins
 * while the run is running and no call is waiting or dispatching, preceded by the inserts of the
 * proposed memories as `pending` suggestions under the same condition (issue 34; those past
 * the owner's MAX_PENDING_SUGGESTIONS are left out, and the report still ends the run).
 * Releases the lease.
 * @throws DomainError('call_in_progress') while a call is being dispatched;
 *   DomainError('run_not_active') when the run is not running.
 */
export async function reportRun(ports: Ports, principal: Principal, run: RunRow, body: ReportBody): Promise<ReportedRun> {
  const held = await holdRun(ports, principal, run);
  const now = ports.clock.now();
  const inFlight = ports.db
    .select({ id: toolCalls.id })
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, held.id), inArray(toolCalls.state, ['dispatching', 'waiting_for_approval'])));
  const reportWins = and(eq(runs.id, held.id), eq(runs.state, 'running'), notExists(inFlight)) as SQL;
  const proposals = body.memories ?? [];
  // The suggestions first, under the very condition of the report's update that follows them.
  const statements: BatchItem<'sqlite'>[] = [
    ...suggestionStatements(ports.db, principal, held, proposals, reportWins, now),
    ports.db.update(runs).set({ state: body.status, reportSummary: body.summary, updatedAt: now }).where(reportWins),
  ];
  const results = (await ports.db.batch(statements as [BatchItem<'sqlite'>, ...BatchItem<'sqlite'>[]])) as RunResult[];
  const ended = results[results.length - 1] as RunResult;
  if (rowsChanged(ended) !== 1) {
    const current = await loadRun(ports, principal, held.id);
    if (current.state === 'running') throw new DomainError('call_in_progress', 'a call of this run is still being dispatched; wait for it to finish');
    throw new DomainError('run_not_active', `the run is ${current.state}`);
  }
  const keptSuggestions = results.slice(0, -1).filter((result) => rowsChanged(result) === 1).length;
  await releaseLease(ports, held);
  notifyOwner(ports, held.ownerId, 'run_ended', { run_id: held.id, state: body.status });
  return { run: { ...held, state: body.status, reportSummary: body.summary, updatedAt: now }, proposedMemories: proposals.length, keptSuggestions };
}

/**
 * What became of a report's proposed memories, in words for the agent (none when it proposed
 * none), e.g. `memories: 2 of 3 kept as suggestions for the owner to accept or reject; 1 not
 * kept: the owner already has 50 suggestions waiting`.
 */
export function suggestionNotes(reported: ReportedRun): string[] {
  if (reported.proposedMemories === 0) return [];
  const notKept = reported.proposedMemories - reported.keptSuggestions;
  return [
    `memories: ${reported.keptSuggestions} of ${reported.proposedMemories} kept as suggestions for the owner to accept or reject${
      notKept > 0 ? `; ${notKept} not kept: the owner already has ${MAX_PENDING_SUGGESTIONS} suggestions waiting` : ''
    }`,
  ];
}

/**
 * Cancels a run that has not ended: the run, its pending approvals, its parked calls and its
 * sign-in wait (fenced: a later sign-in never resumes it), in one batch. A call already being dispatched finishes and is recorded, but nothing new starts.
 * Releases its lease, and the sign-in episode it waited on when no other run waits on it (see
 * `releaseEpisodesOf`: its browser is free at once; host trouble never fails the cancel).
 * A recipe-bound run is the owner's to cancel, not an agent's (issue 19).
 * @throws DomainError('run_not_active') when the run already ended; DomainError('forbidden') for
 *   an agent on a recipe-bound run.
 */
export async function cancelRun(ports: Ports, principal: Principal, run: RunRow): Promise<RunRow> {
  if (run.recipeId !== null && principal.kind !== 'owner') {
    throw new DomainError('forbidden', `run ${run.id} is carried out by the reviewed recipe ${run.recipeId}; only its owner cancels it`);
  }
  const now = ports.clock.now();
  const [cancelled] = await ports.db.batch(fenceRunStatements(ports.db, { runId: run.id }, { reason: 'cancelled', endState: 'cancelled', now }));
  if (rowsChanged(cancelled) !== 1) throw new DomainError('run_not_active', `the run already ended (${run.state})`);
  await releaseLease(ports, run);
  // Whatever state it was read in: it may have parked since (one read, once per run).
  await releaseEpisodesOf(ports, run.id);
  notifyOwner(ports, run.ownerId, 'run_ended', { run_id: run.id, state: 'cancelled' });
  return { ...run, state: 'cancelled', updatedAt: now };
}
