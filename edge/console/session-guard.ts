import type { Context } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { httpStatusOf } from '../../shared/errors.ts';
import { isLoopbackHostname } from '../auth/loopback.ts';
import type { Principal } from '../auth/principal.ts';
import type { ConsoleSessionRow } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { AppEnv } from '../http/app-env.ts';
import { signInPage } from './pages.ts';
import { openSession, SESSION_TTL_MS, sessionOf } from './sessions.ts';

/** The session cookie: HttpOnly, SameSite=Strict, only under `/console`; Secure outside loopback. */
export const SESSION_COOKIE = 'console_session';

/** The console's Hono environment: the app's, plus the session {@link requireSession} found. */
export type ConsoleEnv = AppEnv & { Variables: { session: ConsoleSessionRow } };

/** Starts a session for `ownerId` and sets its cookie. */
export async function signIn(c: Context<ConsoleEnv>, ownerId: string): Promise<void> {
  const opened = await openSession(c.var.ports, ownerId);
  setCookie(c, SESSION_COOKIE, opened.sessionId, {
    httpOnly: true,
    sameSite: 'Strict',
    path: '/console',
    secure: !isLoopbackHostname(new URL(c.req.url).hostname),
    maxAge: Math.floor(SESSION_TTL_MS / 1000),
  });
}

/** The owner a session acts as: the owner principal itself. */
export function ownerOf(session: ConsoleSessionRow): Principal {
  return { id: session.ownerId, kind: 'owner', ownerId: session.ownerId };
}

/** Only with a live session; without one, the sign-in page (a page) or 401 (the refresh). */
export async function requireSession(c: Context<ConsoleEnv>, next: () => Promise<void>): Promise<Response | undefined> {
  const session = await sessionOf(c.var.ports, getCookie(c, SESSION_COOKIE));
  if (session === undefined) {
    if (c.req.method === 'GET' && c.req.path !== '/console/inbox') return c.redirect('/console/sign-in', 303);
    return c.html(signInPage('Your session has ended; sign in again.'), 401);
  }
  c.set('session', session);
  await next();
  return undefined;
}

/**
 * The form of a post, after checking it carries the session's CSRF token.
 * @throws DomainError('forbidden') when it does not.
 */
export async function requireCsrf(c: Context<ConsoleEnv>): Promise<Record<string, string | File>> {
  const form = await formOf(c);
  if (typeof form.csrf !== 'string' || !sameSecret(form.csrf, c.var.session.csrfToken)) {
    throw new DomainError('forbidden', 'the form is not from this session; reload the console');
  }
  return form;
}

/**
 * The fields of a posted form (urlencoded or multipart).
 * @throws DomainError('invalid_request') for a body that is not a form.
 */
export async function formOf(c: Context<ConsoleEnv>): Promise<Record<string, string | File>> {
  try {
    return (await c.req.parseBody()) as Record<string, string | File>;
  } catch {
    throw new DomainError('invalid_request', 'the body is not a form');
  }
}

/** Compares two secrets in time that depends on their length only. */
function sameSecret(given: string, expected: string): boolean {
  if (given.length !== expected.length) return false;
  let difference = 0;
  for (let index = 0; index < given.length; index++) difference |= given.charCodeAt(index) ^ expected.charCodeAt(index);
  return difference === 0;
}

/** What an owner's action answered, in words: its success, or the API's refusal (not found, already decided). */
export async function refusalAsNotice(act: () => Promise<string>): Promise<string> {
  try {
    return await act();
  } catch (error) {
    if (error instanceof DomainError && httpStatusOf(error.code) < 500) return `Not done: ${error.message}.`;
    throw error;
  }
}
