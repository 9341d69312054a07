import { DomainError } from '../domain-error.ts';

/**
 * Turns a database refusal that protects an invariant into the API error a client can act on:
 * the one-active-call index into `call_in_progress`, the run guard into `run_not_active`, the
 * watermark guard, the one-effect-per-call index and the live-grant guard into `already_decided`. Any other error is
 * returned unchanged (and will surface as `internal_error`: a bug).
 */
export function translateConstraint(error: unknown): unknown {
  const text = messagesOf(error);
  if (text.includes('tool_calls.run_id') || text.includes('tool_calls_one_active_per_run')) {
    return new DomainError('call_in_progress', 'another call of this run is waiting for approval or being dispatched');
  }
  if (text.includes('guard:run_not_active')) {
    return new DomainError('run_not_active', 'the run is not running (it may be waiting for approval, cancelled or finished)');
  }
  if (text.includes('guard:grant_exhausted')) {
    return new DomainError('already_decided', 'the grant can no longer be charged');
  }
  if (text.includes('guard:call_not_dispatching') || text.includes('effects.tool_call_id')) {
    return new DomainError('already_decided', 'the call was already decided');
  }
  return error;
}

function messagesOf(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 5; depth++) {
    parts.push(current.message);
    current = current.cause;
  }
  return parts.join(' | ');
}
