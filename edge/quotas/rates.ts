import { and, eq, sql } from 'drizzle-orm';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { rateWindows } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports, RunResult } from '../ports.ts';

/**
 * Per-minute rates per owner and per agent (README "Security"): fixed one-minute windows counted
 * in D1 (`rate_windows`). An admission is one batch of conditional upserts, so requests that
 * arrive together can never all pass: the first statement counts the narrowest gate only while
 * every gate has room, the others count only if the first did. A refusal is 429 `rate_limited`
 * with `Retry-After` until the window that is full ends, and counts nothing. The standing limits
 * (open runs, leases) are checked where the row is written (lifecycle.ts, lease-availability.ts).
 */

/** Length of one rate window, in ms. */
const WINDOW_MS = 60_000;

/** Seconds until `atMs` (epoch ms), at least 1: a `Retry-After` value. */
export function secondsUntil(now: number, atMs: number): number {
  return Math.max(1, Math.ceil((atMs - now) / 1000));
}

/** One rate a request must fit: its window's key, its limit per window, and what it counts (for the message). */
interface Gate {
  readonly key: string;
  readonly limit: number;
  readonly what: string;
}

/** True (as SQL) while the window of `gate` has room at `now`: absent, ended, or under its limit. */
function hasRoom(gate: Gate, now: number) {
  return sql`not exists (select 1 from rate_windows w where w.key = ${gate.key} and w.window_start > ${now - WINDOW_MS} and w.count >= ${gate.limit})`;
}

/**
 * Counts one admission in every gate, or in none: the first gate's upsert runs only while all
 * gates have room and stamps `token`; every other gate's upsert runs only if that stamp landed.
 * @throws DomainError('rate_limited') naming the full gate, with Retry-After until its window ends.
 */
async function admit(ports: Ports, gates: readonly [Gate, ...Gate[]]): Promise<void> {
  const now = ports.clock.now();
  const token = newId('adm');
  const allHaveRoom = sql.join(
    gates.map((gate) => hasRoom(gate, now)),
    sql` and `,
  );
  // Each gate's window row exists first (an empty, long-ended window), so counting is a plain
  // conditional update.
  const exists = (gate: Gate) => ports.db.insert(rateWindows).values({ key: gate.key, windowStart: 0, count: 0, token: '' }).onConflictDoNothing();
  const ended = sql`${rateWindows.windowStart} <= ${now - WINDOW_MS}`;
  const counted = (gate: Gate, condition: ReturnType<typeof sql>) =>
    ports.db
      .update(rateWindows)
      .set({
        count: sql`case when ${ended} then 1 else ${rateWindows.count} + 1 end`,
        windowStart: sql`case when ${ended} then ${now} else ${rateWindows.windowStart} end`,
        token,
      })
      .where(and(eq(rateWindows.key, gate.key), condition));
  const [first, ...others] = gates;
  const stamped = sql`exists (select 1 from rate_windows s where s.key = ${first.key} and s.token = ${token})`;
  const results = await ports.db.batch([
    ...gates.map(exists),
    counted(first, allHaveRoom),
    ...others.map((gate) => counted(gate, stamped)),
  ] as unknown as Parameters<typeof ports.db.batch>[0]);
  // Admitted when this batch's own update of the first gate changed its row (later admissions
  // restamp the token, so the row is not proof afterwards).
  if (rowsChanged(results[gates.length] as RunResult) === 1) return;
  const windows = await ports.db
    .select()
    .from(rateWindows)
    .where(
      sql`${rateWindows.key} in (${sql.join(
        gates.map((gate) => sql`${gate.key}`),
        sql`, `,
      )})`,
    )
    .all();
  for (const gate of gates) {
    const window = windows.find((row) => row.key === gate.key);
    if (window && window.windowStart > now - WINDOW_MS && window.count >= gate.limit) {
      throw new DomainError('rate_limited', `${gate.what}: at most ${gate.limit} per minute; try again later`, undefined, {
        retryAfterS: secondsUntil(now, window.windowStart + WINDOW_MS),
      });
    }
  }
  // A window ended between the batch and the read: the next try is admitted.
  throw new DomainError('rate_limited', 'a rate window was full; try again', undefined, { retryAfterS: 1 });
}

/**
 * Before a run is created: the agent's (for an agent) and the owner's runs per minute.
 * @throws DomainError('rate_limited') with Retry-After.
 */
export async function admitRunCreation(ports: Ports, principal: Principal): Promise<void> {
  const quotas = ports.config.quotas;
  const owner: Gate = { key: `owner:${principal.ownerId}:runs`, limit: quotas.runsPerMinutePerOwner, what: 'runs created for this owner' };
  if (principal.kind !== 'agent') return admit(ports, [owner]);
  return admit(ports, [{ key: `agent:${principal.id}:runs`, limit: quotas.runsPerMinutePerAgent, what: 'runs created by this agent' }, owner]);
}

/**
 * Before a proposal is looked at, even before its body is parsed (so malformed proposals count
 * too): the agent's and its owner's proposals per minute.
 * @throws DomainError('rate_limited') with Retry-After.
 */
export async function admitProposal(ports: Ports, principal: Principal): Promise<void> {
  const quotas = ports.config.quotas;
  return admit(ports, [
    { key: `agent:${principal.id}:proposals`, limit: quotas.proposalsPerMinutePerAgent, what: 'proposals by this agent' },
    { key: `owner:${principal.ownerId}:proposals`, limit: quotas.proposalsPerMinutePerOwner, what: "proposals on this owner's runs" },
  ]);
}
