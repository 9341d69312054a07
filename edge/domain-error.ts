import type { ErrorCode } from '../shared/errors.ts';

/**
 * The edge's one error type: a stable {@link ErrorCode} from the closed set in shared/errors.ts,
 * a message a caller can act on, and optional identifiers (`details`, e.g. the denied call's id
 * and rule). Domain code throws it and knows nothing of HTTP: only the app's `onError` maps the
 * code to a status (shared/errors.ts `httpStatusOf`) and renders `{error: {code, message,
 * request_id, details?}}`, with `Retry-After` (seconds) when `retryAfterS` is set (429s, `profile_in_use`).
 */
export class DomainError extends Error {
  override readonly name = 'DomainError';
  readonly code: ErrorCode;
  readonly details: Record<string, string> | undefined;
  /** Seconds after which trying again may succeed (`Retry-After`); whole seconds, at least 1. */
  readonly retryAfterS: number | undefined;
  /** A bearer challenge for `WWW-Authenticate` (RFC 6750 / RFC 9728), e.g. on the MCP endpoint's 401. */
  readonly wwwAuthenticate: string | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, string>, options: { retryAfterS?: number; wwwAuthenticate?: string } = {}) {
    super(message);
    this.code = code;
    this.details = details;
    this.retryAfterS = options.retryAfterS;
    this.wwwAuthenticate = options.wwwAuthenticate;
  }
}
