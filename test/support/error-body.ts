import { expect } from 'vitest';

/**
 * The whole body of a refusal, for `toEqual`: `code` and `message` exactly, and `request_id` as
 * the random UUID the edge gives a request that brings no X-Request-Id. No Node imports: the edge
 * tests (inside workerd) use it too.
 */
export function errorBody(code: string, message: string) {
  return { error: { code, message, request_id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/) } };
}
