import { z } from 'zod';

/**
 * The closed set of error codes the system answers with, on the HTTP API and on the edge-host
 * wire alike. Every code maps to exactly one HTTP status in {@link httpStatusOf}; host-side codes
 * (`lease_lost`, `admission_full`, ...) usually travel inside a finished tool call's result rather
 * than as an HTTP status, but the mapping is exhaustive so nothing can fall through to a 5xx.
 */
export const ErrorCode = z.enum([
  // request shape
  'malformed_json',
  'invalid_request',
  'invalid_arguments',
  'invalid_cursor',
  'unsupported_version',
  'payload_too_large',
  'file_too_large',
  'unsupported_media_type',
  'not_found',
  'method_not_allowed',
  // identity and policy
  'unauthenticated',
  'principal_revoked',
  'forbidden',
  'policy_denied',
  'outside_run_origins',
  // state conflicts
  'run_not_active',
  'call_in_progress',
  'already_decided',
  'stale_revision',
  'authentication_required',
  'profile_revoked',
  'profile_in_use',
  'stale_generation',
  'already_revoked',
  'last_operator',
  'too_many_files',
  'evidence_gates_failed',
  'evidence_mismatch',
  // quotas and rate limits
  'rate_limited',
  'quota_exceeded',
  'fleet_full',
  // browser host
  'lease_lost',
  'admission_full',
  'page_changed',
  'outcome_unknown',
  'navigation_failed',
  'action_failed',
  'not_actionable',
  'target_changed',
  'host_unavailable',
  'host_draining',
  'deadline_exceeded',
  // wire protocol only
  'unauthorized_frame',
  'unknown_method',
  'invalid_params',
  // never expected; a bug
  'internal_error',
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

/**
 * HTTP status for an error code. Exhaustive over {@link ErrorCode}: adding a code without a status
 * is a type error. Only `internal_error` is a 5xx, and it means a bug.
 */
export function httpStatusOf(code: ErrorCode): 400 | 401 | 403 | 404 | 405 | 408 | 409 | 413 | 415 | 424 | 429 | 500 {
  switch (code) {
    case 'malformed_json':
    case 'invalid_request':
    case 'invalid_arguments':
    case 'invalid_cursor':
    case 'unsupported_version':
    case 'unknown_method':
    case 'invalid_params':
      return 400;
    case 'unauthenticated':
    case 'principal_revoked':
    case 'unauthorized_frame':
      return 401;
    case 'forbidden':
    case 'policy_denied':
    case 'outside_run_origins':
      return 403;
    case 'not_found':
      return 404;
    case 'method_not_allowed':
      return 405;
    case 'deadline_exceeded':
      return 408;
    case 'run_not_active':
    case 'call_in_progress':
    case 'already_decided':
    case 'stale_revision':
    case 'authentication_required':
    case 'profile_revoked':
    case 'profile_in_use':
    case 'stale_generation':
    case 'already_revoked':
    case 'last_operator':
    case 'too_many_files':
    case 'evidence_gates_failed':
    case 'evidence_mismatch':
    case 'lease_lost':
    case 'page_changed':
    case 'outcome_unknown':
    case 'navigation_failed':
    case 'action_failed':
    case 'not_actionable':
    case 'target_changed':
      return 409;
    case 'payload_too_large':
    case 'file_too_large':
      return 413;
    case 'unsupported_media_type':
      return 415;
    case 'host_unavailable':
    case 'host_draining':
      return 424;
    case 'admission_full':
    case 'fleet_full':
    case 'rate_limited':
    case 'quota_exceeded':
      return 429;
    case 'internal_error':
      return 500;
  }
}

/**
 * The one error body shape of the HTTP API: `{error: {code, message, request_id, details?}}`.
 * `details` carries identifiers a client may act on, e.g. the denied call's id and rule.
 */
export const ErrorBody = z.strictObject({
  error: z.strictObject({
    code: ErrorCode,
    message: z.string(),
    request_id: z.string(),
    details: z.record(z.string(), z.string()).optional(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** An error as it is carried inside a tool call's result or a wire frame: `{code, message}`. */
export const ErrorDetail = z.strictObject({
  code: ErrorCode,
  message: z.string().max(2000),
});
export type ErrorDetail = z.infer<typeof ErrorDetail>;
