import { and, eq } from 'drizzle-orm';
import type { CallPhases } from '../../shared/api.ts';
import { type SignInSignal, splitSignIn } from '../../shared/authentication.ts';
import type { ErrorCode, ErrorDetail } from '../../shared/errors.ts';
import type { ConditionResult, Observation, OmittedObservation, SettleReport } from '../../shared/observation.ts';
import type { Condition } from '../../shared/predicate.ts';
import { MAX_OPERATION_TIMEOUT_MS } from '../../shared/protocol.ts';
import { type ToolInvocation, ToolName, ToolVersion, toolContract, wireAction } from '../../shared/tools.ts';
import { effects, type RunRow, runs, type ToolCallRow, toolCalls } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { HostCallError, HostNoAnswer, type HostSession, HostUnreachable } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { awaitCondition, ConditionDeadlineExceeded } from '../postcondition/await-condition.ts';
import { parkForSignIn } from '../sign-in/park.ts';
import { ensureLease } from './lease.ts';
import { projectObservation } from './projection.ts';

/** Host error codes that guarantee the command was not carried out. */
const NOT_SENT: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'invalid_arguments',
  'stale_revision',
  'lease_lost',
  'page_changed',
  'action_failed',
  'admission_full',
  'navigation_failed',
  'invalid_params',
  'unknown_method',
  'unauthorized_frame',
]);

/** How a dispatch ended, before it is written down. */
interface DispatchOutcome {
  state: 'succeeded' | 'failed' | 'uncertain';
  /** The last observation read, with the condition result when there was one. */
  observation: Observation | null;
  /** How the dispatched command settled (a later condition read reports `not_waited`). */
  settle?: SettleReport;
  condition?: ConditionResult;
  /** Where the page went when it left the run's origins (its content is not kept). */
  left?: { revision: number; url: string };
  error: ErrorDetail | null;
  retryable: boolean;
  dispatch: NonNullable<CallPhases['dispatch']>['outcome'];
  leaseGeneration?: number;
  /** The page the command left the browser on asks for sign-in (the host's signal). */
  signIn?: SignInSignal;
}

/**
 * Sends exactly one command for a call that is already `dispatching` (and, for an external
 * write, whose effect watermark is already committed), then records how it ended in one batch.
 * Never retries. The tool deadline (config `toolDeadlineMs`, capped by the run deadline) bounds
 * everything; when it runs out after the watermark, the call ends `uncertain`, not retryable
 * (DESIGN.md section 4). Never throws for host trouble: it becomes the call's outcome.
 * @returns the call row as stored afterwards.
 */
export async function dispatchCall(ports: Ports, run: RunRow, call: ToolCallRow, invocation: ToolInvocation): Promise<ToolCallRow> {
  const isWrite = toolContract(invocation.tool, invocation.version).classification === 'external_write';
  const startedAt = ports.clock.now();
  const deadlineAt = Math.min(call.deadlineAt ?? startedAt + ports.config.toolDeadlineMs, run.deadlineAt);
  const remaining = () => Math.max(0, deadlineAt - ports.clock.now());

  let outcome: DispatchOutcome;
  let session: HostSession | undefined;
  let sent = false;
  try {
    session = await ports.host.connect(Math.min(remaining(), 10_000));
    const lease = await ensureLease(ports, session, run, isWrite, remaining());
    const timeout = Math.max(100, Math.min(remaining(), MAX_OPERATION_TIMEOUT_MS));
    sent = true;
    const { observation, signIn } = splitSignIn(await sendCommand(session, lease.lease_id, invocation, timeout));
    outcome = { state: 'succeeded', observation, settle: observation.settle, error: null, retryable: false, dispatch: 'answered', leaseGeneration: lease.generation };
    const condition = conditionOf(invocation);
    if (!withinOrigins(observation.url, run.origins)) outcome = withheld(outcome, observation, isWrite);
    else if (signIn && withinOrigins(`${signIn.origin}/`, run.origins)) outcome = atSignInWall(outcome, signIn, isWrite);
    else if (condition) outcome = await withCondition(ports, session, lease.lease_id, condition, outcome, deadlineAt, isWrite);
  } catch (error) {
    outcome = classifyFailure(inAgentTerms(error, invocation), isWrite, sent);
  } finally {
    session?.close();
  }
  const recorded = await recordOutcome(ports, run, call, outcome, startedAt, isWrite);
  if (outcome.signIn && outcome.observation) {
    const protectedUrl = invocation.tool === 'browser.navigate' ? invocation.arguments.url : (run.latestUrl ?? outcome.observation.url);
    await parkForSignIn(ports, run, { signal: outcome.signIn, signInUrl: outcome.observation.url, protectedUrl, toolCallId: call.id });
  }
  return recorded;
}

/**
 * The command answered on a page that asks for sign-in (ADR-0164 part 3): the run will park for
 * the owner's sign-in. A read did not read what it was after: it fails `authentication_required`,
 * retryable once the run resumes. A write was sent and keeps its outcome; no condition is
 * evaluated on a sign-in wall.
 */
function atSignInWall(outcome: DispatchOutcome, signIn: SignInSignal, isWrite: boolean): DispatchOutcome {
  const message = `${signIn.origin} asks for sign-in; the run waits for the owner to sign in, then resumes with a fresh read`;
  return isWrite
    ? { ...outcome, signIn }
    : { ...outcome, signIn, state: 'failed', error: { code: 'authentication_required', message }, retryable: true };
}

function sendCommand(session: HostSession, leaseId: string, invocation: ToolInvocation, timeoutMs: number): Promise<Observation> {
  switch (invocation.tool) {
    case 'browser.navigate':
      return session.call('page.navigate', { lease_id: leaseId, url: invocation.arguments.url, timeout_ms: timeoutMs }, timeoutMs + 1_000);
    case 'browser.observe':
      return session.call(
        'page.observe',
        { lease_id: leaseId, timeout_ms: timeoutMs, ...(invocation.arguments.continuation ? { continuation: invocation.arguments.continuation } : {}) },
        timeoutMs + 1_000,
      );
    case 'browser.act':
      return session.call('page.act', { lease_id: leaseId, action: wireAction(invocation.arguments), timeout_ms: timeoutMs }, timeoutMs + 1_000);
  }
}

/** Whether a page URL belongs to one of the run's origins. */
function withinOrigins(url: string, origins: readonly string[]): boolean {
  try {
    return origins.includes(new URL(url).origin);
  } catch {
    return false;
  }
}

/**
 * A redirect, a script or a link took the page outside the run's origins: the agent gets none of
 * its content (it could carry anything), only where it went. A write still happened and stays
 * succeeded; a read failed to read what the run may read. The edge records where the page is, so
 * acts on it are denied until the agent navigates back (see `decide`).
 */
function withheld(outcome: DispatchOutcome, observation: Observation, isWrite: boolean): DispatchOutcome {
  let origin = 'an unknown origin';
  try {
    origin = new URL(observation.url).origin;
  } catch {
    // keep the generic wording
  }
  const message = `the page is now at ${origin}, outside the run's origins; its content is withheld`;
  return {
    ...outcome,
    state: isWrite ? 'succeeded' : 'failed',
    observation: null,
    left: { revision: observation.revision, url: observation.url },
    error: { code: 'outside_run_origins', message },
    retryable: false,
  };
}

/** The condition a call asks the edge to evaluate: an act's postcondition or an observe's wait_for. */
function conditionOf(invocation: ToolInvocation): Condition | undefined {
  if (invocation.tool === 'browser.act') return invocation.arguments.postcondition;
  if (invocation.tool === 'browser.observe') return invocation.arguments.wait_for;
  return undefined;
}

/**
 * Evaluates the call's condition after its command answered, through ordinary reads on the same
 * session. For a write, losing the evidence or the deadline during the reads makes the call
 * `uncertain` and not retryable: the action was sent (ADR-0159). An unmet condition is not a
 * failure: the call succeeds with `not_observed`.
 */
async function withCondition(
  ports: Ports,
  session: HostSession,
  leaseId: string,
  condition: Condition,
  answered: DispatchOutcome,
  deadlineAt: number,
  isWrite: boolean,
): Promise<DispatchOutcome> {
  try {
    const { observation, report } = await awaitCondition(ports.clock, session, leaseId, condition, answered.observation!, deadlineAt);
    return { ...answered, observation: { ...observation, condition: report }, condition: report };
  } catch (error) {
    const deadline = error instanceof ConditionDeadlineExceeded;
    const code: ErrorCode = deadline ? 'deadline_exceeded' : error instanceof HostCallError ? error.code : 'outcome_unknown';
    const message = error instanceof Error ? error.message : String(error);
    return isWrite
      ? { ...answered, state: 'uncertain', observation: null, error: { code: deadline ? 'deadline_exceeded' : 'outcome_unknown', message }, retryable: false }
      : { ...answered, state: 'failed', observation: null, error: { code, message }, retryable: true };
  }
}

/**
 * A host error restated in the agent's terms where the agent's own argument caused it: a
 * continuation cursor the host did not issue (forged, altered, another lease's, or pointing past
 * the snapshot) is the host's `invalid_params`, which the agent knows as `invalid_arguments`.
 * A cursor of an older revision stays `stale_revision`, and one whose references a failed
 * capture voided stays `page_changed`: both already say what to do (observe again).
 */
function inAgentTerms(error: unknown, invocation: ToolInvocation): unknown {
  const continuation = invocation.tool === 'browser.observe' && invocation.arguments.continuation !== undefined;
  if (continuation && error instanceof HostCallError && error.code === 'invalid_params') {
    return new HostCallError('invalid_arguments', error.message);
  }
  return error;
}

/**
 * What a failure means for the call. A write is `uncertain` once its frame may have been acted on
 * (no answer, or the host reports `outcome_unknown`); it is `failed` only when the host says it
 * did not carry it out, or it was never sent.
 */
function classifyFailure(error: unknown, isWrite: boolean, sent: boolean): DispatchOutcome {
  if (error instanceof HostUnreachable || (error instanceof HostNoAnswer && !sent)) {
    return { state: 'failed', observation: null, error: { code: 'host_unavailable', message: error.message }, retryable: true, dispatch: 'not_sent' };
  }
  if (error instanceof HostCallError) {
    if (NOT_SENT.has(error.code) || !sent) {
      return { state: 'failed', observation: null, error: { code: error.code, message: error.message }, retryable: true, dispatch: 'host_error' };
    }
    return isWrite
      ? { state: 'uncertain', observation: null, error: { code: 'outcome_unknown', message: error.message }, retryable: false, dispatch: 'host_error' }
      : { state: 'failed', observation: null, error: { code: error.code, message: error.message }, retryable: true, dispatch: 'host_error' };
  }
  if (error instanceof HostNoAnswer) {
    return isWrite
      ? { state: 'uncertain', observation: null, error: { code: 'outcome_unknown', message: error.message }, retryable: false, dispatch: error.reason }
      : { state: 'failed', observation: null, error: { code: error.reason === 'deadline_exceeded' ? 'deadline_exceeded' : 'host_unavailable', message: error.message }, retryable: true, dispatch: error.reason };
  }
  const message = error instanceof Error ? error.message : String(error);
  return isWrite
    ? { state: 'uncertain', observation: null, error: { code: 'outcome_unknown', message }, retryable: false, dispatch: 'connection_lost' }
    : { state: 'failed', observation: null, error: { code: 'host_unavailable', message }, retryable: true, dispatch: 'connection_lost' };
}

async function recordOutcome(ports: Ports, run: RunRow, call: ToolCallRow, outcome: DispatchOutcome, startedAt: number, isWrite: boolean): Promise<ToolCallRow> {
  const now = ports.clock.now();
  const phases: CallPhases = {
    ...(call.phases as CallPhases),
    dispatch: {
      started_at: iso(startedAt),
      finished_at: iso(now),
      elapsed_ms: now - startedAt,
      outcome: outcome.dispatch,
      ...(outcome.leaseGeneration !== undefined ? { lease_generation: outcome.leaseGeneration } : {}),
    },
    ...(outcome.settle ? { settle: outcome.settle } : {}),
    ...(outcome.condition
      ? { postcondition: { status: outcome.condition.status, observations: outcome.condition.observations, elapsed_ms: outcome.condition.elapsed_ms } }
      : {}),
  };
  const update = {
    state: outcome.state,
    result: storable(outcome.observation),
    errorCode: outcome.error?.code ?? null,
    errorMessage: outcome.error?.message ?? null,
    retryable: outcome.retryable,
    phases,
    updatedAt: now,
  };
  const statements = [
    ports.db
      .update(toolCalls)
      .set(update)
      .where(and(eq(toolCalls.id, call.id), eq(toolCalls.state, 'dispatching'))),
    ...(isWrite
      ? [ports.db.update(effects).set({ state: outcome.state, finishedAt: now }).where(and(eq(effects.toolCallId, call.id), eq(effects.state, 'committed')))]
      : []),
    ...(outcome.observation ?? outcome.left
      ? [
          ports.db
            .update(runs)
            .set({
              latestRevision: (outcome.observation ?? outcome.left)!.revision,
              latestUrl: (outcome.observation ?? outcome.left)!.url,
              // Semantic progress (ADR-0164 part 4): a write that went through with no sign-in
              // wall after it. Reads do not count: the fresh read every resumption starts with
              // is revision churn, not progress.
              ...(isWrite && outcome.state === 'succeeded' && !outcome.signIn ? { signInAttempts: 0 } : {}),
            })
            .where(eq(runs.id, run.id)),
        ]
      : []),
  ] as const;
  try {
    await ports.db.batch(statements as unknown as Parameters<typeof ports.db.batch>[0]);
  } catch (error) {
    // The outcome must be recorded whatever the result looked like: keep the state, drop the rest.
    console.error(`[${ports.requestId}] recording the outcome of ${call.id} failed; recording it without its result`, error);
    await ports.db.batch([
      ports.db
        .update(toolCalls)
        .set({ state: outcome.state, result: null, errorCode: outcome.error?.code ?? null, errorMessage: outcome.error?.message ?? null, retryable: outcome.retryable, updatedAt: now })
        .where(and(eq(toolCalls.id, call.id), eq(toolCalls.state, 'dispatching'))),
      ports.db.update(effects).set({ state: outcome.state, finishedAt: now }).where(and(eq(effects.toolCallId, call.id), eq(effects.state, 'committed'))),
    ]);
  }
  return (await ports.db.select().from(toolCalls).where(eq(toolCalls.id, call.id)).get()) ?? { ...call, ...update };
}

/** Largest observation stored with a call, in bytes of JSON (D1 rows are limited to 2 MB). */
export const MAX_STORED_RESULT_BYTES = 1024 * 1024;

/** The observation as it can be stored: whole, or the explicit omission marker when too large. */
function storable(observation: Observation | null): Observation | OmittedObservation | null {
  if (observation === null) return null;
  return projectObservation(observation, MAX_STORED_RESULT_BYTES);
}

/** Grace after a call's deadline before an unfinished dispatch is declared lost, in ms. */
const LOST_DISPATCH_GRACE_MS = 5_000;

/**
 * A call still `dispatching` well past its deadline was abandoned (the edge instance died
 * mid-dispatch). It ends `uncertain` (a write, whose watermark is committed) or `failed` (a read),
 * by one conditional update; never resent.
 */
export async function recoverLostDispatch(ports: Ports, call: ToolCallRow, isWrite: boolean): Promise<ToolCallRow> {
  const now = ports.clock.now();
  if (call.state !== 'dispatching' || call.deadlineAt === null || now < call.deadlineAt + LOST_DISPATCH_GRACE_MS) return call;
  const state = isWrite ? ('uncertain' as const) : ('failed' as const);
  await ports.db.batch([
    ports.db
      .update(toolCalls)
      .set({
        state,
        errorCode: isWrite ? 'outcome_unknown' : 'deadline_exceeded',
        errorMessage: 'the dispatch was abandoned before an answer was recorded',
        retryable: !isWrite,
        updatedAt: now,
      })
      .where(and(eq(toolCalls.id, call.id), eq(toolCalls.state, 'dispatching'))),
    ports.db.update(effects).set({ state: 'uncertain', finishedAt: now }).where(and(eq(effects.toolCallId, call.id), eq(effects.state, 'committed'))),
  ]);
  return (await ports.db.select().from(toolCalls).where(eq(toolCalls.id, call.id)).get()) ?? call;
}

/**
 * A call as it should read now: a `dispatching` call abandoned past its deadline is settled first
 * (see {@link recoverLostDispatch}); any other call is returned as it is.
 */
export function settleIfLost(ports: Ports, call: ToolCallRow): Promise<ToolCallRow> {
  if (call.state !== 'dispatching') return Promise.resolve(call);
  const tool = ToolName.safeParse(call.tool);
  const version = ToolVersion.safeParse(call.version);
  const isWrite = tool.success && version.success && toolContract(tool.data, version.data).classification === 'external_write';
  return recoverLostDispatch(ports, call, isWrite);
}
