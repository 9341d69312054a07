import { OpenAPIHono } from '@hono/zod-openapi';
import { z } from 'zod';
import { ErrorBody, type ErrorCode, httpStatusOf } from '../../shared/errors.ts';
import { DomainError } from '../domain-error.ts';
import type { AppEnv } from './app-env.ts';

/**
 * A router whose routes are data (`createRoute`) plus a handler, so the same zod schema validates
 * the request and documents it. Requests that fail their schema answer `invalid_request` (400)
 * with the zod issues in the message; the tool-call route overrides this with `invalid_arguments`.
 */
export function newRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw new DomainError('invalid_request', z.prettifyError(result.error));
    },
  });
}

/** OpenAPI response entries for error codes a route can answer, grouped by status. */
export function errorResponses(...codes: ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(httpStatusOf(code), [...(byStatus.get(httpStatusOf(code)) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, grouped]) => [status, { description: `error: ${grouped.join(', ')}`, content: { 'application/json': { schema: ErrorBody } } }]),
  );
}

/** The JSON body of a request, required, validated by `schema`. */
export function jsonBody<T extends z.ZodType>(schema: T) {
  return { content: { 'application/json': { schema } }, required: true };
}

/** One JSON response of a route. */
export function jsonResponse<T extends z.ZodType>(schema: T, description: string) {
  return { content: { 'application/json': { schema } }, description };
}

/** Codes every authenticated route may answer. */
export const AUTH_ERRORS: ErrorCode[] = [
  'unauthenticated',
  'principal_revoked',
  'forbidden',
  'malformed_json',
  'invalid_request',
  'payload_too_large',
  'unsupported_media_type',
];
