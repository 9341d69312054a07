import { HTTPException } from 'hono/http-exception';
import { type ErrorCode, httpStatusOf } from '../../shared/errors.ts';

/**
 * The edge's one error type: a stable {@link ErrorCode} whose HTTP status comes from the one
 * exhaustive mapping in shared/errors.ts. Rendered by the app's single `onError` as
 * `{error: {code, message, request_id}}`.
 */
export class ApiError extends HTTPException {
  readonly code: ErrorCode;
  readonly details: Record<string, string> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, string>) {
    super(httpStatusOf(code), { message });
    this.code = code;
    this.details = details;
  }
}
