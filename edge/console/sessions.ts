import { and, eq, gt, isNull } from 'drizzle-orm';
import { base64url } from 'jose';
import { type ConsoleSessionRow, consoleLinks, consoleSessions } from '../db/schema.ts';
import { sha256Hex } from '../policy/canonical-hash.ts';
import type { Ports } from '../ports.ts';

/** How long a console session lasts from sign-in, in ms (8 hours). */
export const SESSION_TTL_MS = 8 * 60 * 60 * 1000;
/** How long a one-time sign-in link can be used, in ms (15 minutes). */
export const LINK_TTL_MS = 15 * 60 * 1000;

/** 32 random bytes, base64url: a session id, a CSRF token or a link token. */
function randomToken(): string {
  return base64url.encode(crypto.getRandomValues(new Uint8Array(32)));
}

/** A session just opened: the id for the cookie (stored only hashed), its CSRF token and expiry (epoch ms). */
export interface OpenedSession {
  readonly sessionId: string;
  readonly csrfToken: string;
  readonly expiresAt: number;
}

/**
 * Opens a console session for owner `ownerId` (issue 15): a random id, stored as its SHA-256, with
 * a random CSRF token, expiring after {@link SESSION_TTL_MS}. One insert.
 */
export async function openSession(ports: Ports, ownerId: string): Promise<OpenedSession> {
  const now = ports.clock.now();
  const sessionId = randomToken();
  const csrfToken = randomToken();
  const expiresAt = now + SESSION_TTL_MS;
  await ports.db.insert(consoleSessions).values({ idHash: await sha256Hex(sessionId), ownerId, csrfToken, createdAt: now, expiresAt });
  return { sessionId, csrfToken, expiresAt };
}

/** The live session the cookie value `sessionId` names: not ended, not expired; else undefined. */
export async function sessionOf(ports: Ports, sessionId: string | undefined): Promise<ConsoleSessionRow | undefined> {
  if (sessionId === undefined || !/^[A-Za-z0-9_-]{20,100}$/.test(sessionId)) return undefined;
  const now = ports.clock.now();
  return ports.db
    .select()
    .from(consoleSessions)
    .where(and(eq(consoleSessions.idHash, await sha256Hex(sessionId)), isNull(consoleSessions.endedAt), gt(consoleSessions.expiresAt, now)))
    .get();
}

/** Ends the session (sign-out): one conditional update; a session already ended stays as it was. */
export async function endSession(ports: Ports, session: ConsoleSessionRow): Promise<void> {
  await ports.db
    .update(consoleSessions)
    .set({ endedAt: ports.clock.now() })
    .where(and(eq(consoleSessions.idHash, session.idHash), isNull(consoleSessions.endedAt)));
}

/**
 * Issues a one-time sign-in link token for owner `ownerId`, usable once within
 * {@link LINK_TTL_MS} (`npm run dev` prints one for the local owner). Stored hashed.
 */
export async function issueLink(ports: Ports, ownerId: string): Promise<{ token: string; expiresAt: number }> {
  const now = ports.clock.now();
  const token = randomToken();
  const expiresAt = now + LINK_TTL_MS;
  await ports.db.insert(consoleLinks).values({ tokenHash: await sha256Hex(token), ownerId, createdAt: now, expiresAt });
  return { token, expiresAt };
}

/**
 * Uses a one-time link: one conditional update marks it used only while unused and unexpired,
 * so two requests with the same link can never both open a session.
 * @returns the link's owner, or undefined for an unknown, used or expired link.
 */
export async function redeemLink(ports: Ports, token: string): Promise<string | undefined> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return undefined;
  const now = ports.clock.now();
  const [used] = await ports.db
    .update(consoleLinks)
    .set({ usedAt: now })
    .where(and(eq(consoleLinks.tokenHash, await sha256Hex(token)), isNull(consoleLinks.usedAt), gt(consoleLinks.expiresAt, now)))
    .returning({ ownerId: consoleLinks.ownerId });
  return used?.ownerId;
}
