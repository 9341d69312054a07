import type { ErrorCode, ErrorDetail } from '../shared/errors.ts';

/**
 * The one error the host raises on purpose: a code from the closed {@link ErrorCode} enum and a
 * message safe to send to the edge. Anything else that escapes a method is a bug and is answered
 * as `internal_error` (see {@link toErrorDetail}).
 */
export class HostError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string = code, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'HostError';
    this.code = code;
  }
}

/** Longest error message put on the wire, in characters (ErrorDetail allows 2,000). */
const MAX_MESSAGE_CHARS = 500;

/**
 * The wire form `{code, message}` of anything a method threw. A {@link HostError} keeps its code;
 * any other error becomes `internal_error`, with its message (bounded to 500 characters) because
 * the edge is the trusted peer and the message helps an operator find the bug.
 */
export function toErrorDetail(error: unknown): ErrorDetail {
  if (error instanceof HostError) return { code: error.code, message: clip(error.message) };
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'internal_error', message: clip(message) };
}

/**
 * The first line of an error's message, bounded; Playwright's messages carry multi-line call logs
 * that help nobody on the other side of the wire.
 */
export function firstLineOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return clip(message.split('\n', 1)[0] ?? '');
}

function clip(message: string): string {
  return message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS - 1)}…` : message;
}
