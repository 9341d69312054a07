import type { CallPhases } from '../../shared/api.ts';
import type { SignInSignal } from '../../shared/authentication.ts';
import type { ErrorCode, ErrorDetail } from '../../shared/errors.ts';
import type { ConditionResult, Observation, SettleReport } from '../../shared/observation.ts';
import { originOf } from '../../shared/origin.ts';
import { HostCallError, HostNoAnswer, HostUnreachable } from '../host/host-session.ts';

/**
 * How a dispatch ended, in the agent's terms, before it is written down (DESIGN.md section 4,
 * steps 6-7): the pure rules that turn the host's answer or failure into the call's outcome.
 */

/** Host error codes that guarantee the command was not carried out. */
const NOT_SENT: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'invalid_arguments',
  'stale_revision',
  'lease_lost',
  'page_changed',
  'action_failed',
  'not_actionable',
  'target_changed',
  'outside_run_origins',
  'admission_full',
  'profile_in_use',
  'navigation_failed',
  'invalid_params',
  'unknown_method',
  'unauthorized_frame',
]);

/** How a dispatch ended, before it is written down. */
export interface DispatchOutcome {
  state: 'succeeded' | 'failed' | 'uncertain';
  /** The last observation read, with the condition result when there was one. */
  observation: Observation | null;
  /** How the dispatched command settled; the returned observation carries it too, also after condition reads. */
  settle?: SettleReport;
  condition?: ConditionResult;
  /** Where the page went when it left the run's origins (its content is not kept). */
  left?: { revision: number; url: string };
  error: ErrorDetail | null;
  retryable: boolean;
  dispatch: NonNullable<CallPhases['dispatch']>['outcome'];
  leaseGeneration?: number;
  /** The registry id of the host the call was sent to (issue 32), once one was reached. */
  hostId?: string;
  /** A lease renewal whose expiry (epoch ms) is recorded with the outcome, not before (lease.ts `ensureLease`). */
  leaseExpiry?: { readonly leaseId: string; readonly expiresAtMs: number };
  /** The page the command left the browser on asks for sign-in (the host's signal). */
  signIn?: SignInSignal;
}

/**
 * The command answered on a page that asks for sign-in (ADR-0164 part 3): the run will park for
 * the owner's sign-in. A read did not read what it was after: it fails `authentication_required`,
 * retryable once the run resumes. A write was sent and keeps its outcome; no condition is
 * evaluated on a sign-in wall.
 */
export function atSignInWall(outcome: DispatchOutcome, signIn: SignInSignal, isWrite: boolean): DispatchOutcome {
  const message = `${signIn.origin} asks for sign-in; the run waits for the owner to sign in, then resumes with a fresh read`;
  return isWrite ? { ...outcome, signIn } : { ...outcome, signIn, state: 'failed', error: { code: 'authentication_required', message }, retryable: true };
}

/**
 * A redirect, a script or a link took the page outside the run's origins: the agent gets none of
 * its content (it could carry anything), only where it went. A write still happened and stays
 * succeeded; a read failed to read what the run may read. The edge records where the page is, so
 * acts on it are denied until the agent navigates back (see `decide`).
 */
export function withheld(outcome: DispatchOutcome, observation: Observation, isWrite: boolean): DispatchOutcome {
  const origin = originOf(observation.url) ?? 'an unknown origin';
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

/** The page a browser shows before anything was loaded in it (a new lease's, a restarted host's). */
export const BLANK_PAGE = 'about:blank';

/**
 * A read answered on the empty page of a fresh browser (the host restarted, it replaced a hung or
 * crashed page, or the lease started empty): it read nothing of the run's. It fails `page_changed`, retryable, and says to navigate
 * (to the run's last page when there was one); the empty page is not recorded as the run's page
 * (see `recordOutcome`). A navigation back to the run's own page then asks nobody (README "Taint").
 */
export function onBlankPage(outcome: DispatchOutcome, runPage: string | null): DispatchOutcome {
  const where = runPage === null ? 'the page the run is after' : `the run's page (${runPage})`;
  return {
    ...outcome,
    state: 'failed',
    observation: null,
    error: {
      code: 'page_changed',
      message: `the browser shows no page of this run (it is new: the host restarted, the profile moved to another host, or nothing was loaded yet); navigate to ${where}, then observe`,
    },
    retryable: true,
  };
}

/**
 * A host error restated in the agent's terms where the agent's own argument caused it: a
 * continuation cursor the host did not issue (forged, altered, another lease's, or pointing past
 * the snapshot) is the host's `invalid_params`, which the agent knows as `invalid_arguments`.
 * A cursor of an older revision stays `stale_revision`, and one whose references a failed
 * capture voided stays `page_changed`: both already say what to do (observe again).
 */
export function inAgentTerms(error: unknown, hostRefusesOwnArgument: boolean): unknown {
  if (hostRefusesOwnArgument && error instanceof HostCallError && error.code === 'invalid_params') {
    return new HostCallError('invalid_arguments', error.message);
  }
  return error;
}

/**
 * What a failure means for the call. A write is `uncertain` once its frame may have been acted on
 * (no answer, or the host reports `outcome_unknown`); it is `failed` only when the host says it
 * did not carry it out, or it was never sent.
 */
export function classifyFailure(error: unknown, isWrite: boolean, sent: boolean): DispatchOutcome {
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
      : {
          state: 'failed',
          observation: null,
          error: { code: error.reason === 'deadline_exceeded' ? 'deadline_exceeded' : 'host_unavailable', message: error.message },
          retryable: true,
          dispatch: error.reason,
        };
  }
  const message = error instanceof Error ? error.message : String(error);
  return isWrite
    ? { state: 'uncertain', observation: null, error: { code: 'outcome_unknown', message }, retryable: false, dispatch: 'connection_lost' }
    : { state: 'failed', observation: null, error: { code: 'host_unavailable', message }, retryable: true, dispatch: 'connection_lost' };
}
