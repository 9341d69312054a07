import { type SQL, sql } from 'drizzle-orm';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { rateWindows } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports, RunResult } from '../ports.ts';

/**
 * Per-minute rates per owner and per agent (README "Security"): fixed one-minute windows counted
 * in D1 (`rate_windows`). An admission is one conditional upsert of every gate's window, so
 * requests that arrive together can never all pass: it counts in every gate only while every gate
 * has room, else in none. A refusal is 429 `rate_limited`
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
export interface Gate {
  readonly key: string;
  readonly limit: number;
  readonly what: string;
}

/** True (as SQL) while the window of `gate` has room at `now`: absent, ended, or under its limit. */
function hasRoom(gate: Gate, now: number) {
  return sql`not exists (select 1 from rate_windows w where w.key = ${gate.key} and w.window_start > ${now - WINDOW_MS} and w.count >= ${gate.limit})`;
}

/**
 * The admission of `gates` at `now` as one statement: an upsert of every gate's window whose rows
 * are selected only while all gates have room (SQLite reads that selection whole before it
 * writes, as the selection reads the table written), restarting a window that ended. It changes
 * (and, with `returning`, returns) one row per gate when admitted, none when refused.
 * @param returning what the statement returns, e.g. sql`rate_windows.key`: the proposal's first
 *   read rides on its admission (edge/pipeline/proposal-context.ts).
 */
export function admissionStatement(gates: readonly [Gate, ...Gate[]], now: number, returning?: SQL): SQL {
  const token = newId('adm');
  const allHaveRoom = sql.join(
    gates.map((gate) => hasRoom(gate, now)),
    sql` and `,
  );
  const keys = sql.join(
    gates.map((gate, index) => (index === 0 ? sql`select ${gate.key} as key` : sql`select ${gate.key}`)),
    sql` union all `,
  );
  const ended = sql`rate_windows.window_start <= ${now - WINDOW_MS}`;
  return sql`
    insert into rate_windows (key, window_start, count, token)
    select gate.key, ${now}, 1, ${token} from (${keys}) as gate where ${allHaveRoom}
    on conflict (key) do update set
      count = case when ${ended} then 1 else rate_windows.count + 1 end,
      window_start = case when ${ended} then ${now} else rate_windows.window_start end,
      token = excluded.token${returning === undefined ? sql`` : sql` returning ${returning}`}`;
}

/**
 * Counts one admission in every gate, or in none, in one statement (see {@link admissionStatement}).
 * @throws DomainError('rate_limited') naming the full gate, with Retry-After until its window ends.
 */
async function admit(ports: Ports, gates: readonly [Gate, ...Gate[]]): Promise<void> {
  const now = ports.clock.now();
  const counted = await ports.db.run(admissionStatement(gates, now));
  if (rowsChanged(counted as RunResult) === gates.length) return;
  await refuseAdmission(ports, gates, now);
}

/**
 * The refusal of an admission at `now` that counted nothing: reads the gates' windows to name the
 * full one.
 * @throws DomainError('rate_limited') naming the full gate, with Retry-After until its window
 *   ends (1 s when a window ended between the admission and this read).
 */
export async function refuseAdmission(ports: Ports, gates: readonly [Gate, ...Gate[]], now: number): Promise<never> {
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
 * The gates a proposal must fit: the agent's and its owner's proposals per minute (the first, the
 * agent's, is the row the proposal's first read rides on: edge/pipeline/proposal-context.ts).
 */
export function proposalGates(ports: Ports, principal: Principal): readonly [Gate, ...Gate[]] {
  const quotas = ports.config.quotas;
  return [
    { key: `agent:${principal.id}:proposals`, limit: quotas.proposalsPerMinutePerAgent, what: 'proposals by this agent' },
    { key: `owner:${principal.ownerId}:proposals`, limit: quotas.proposalsPerMinutePerOwner, what: "proposals on this owner's runs" },
  ];
}

/**
 * Before a proposal is looked at, even before its body is parsed (so malformed proposals count
 * too): the agent's and its owner's proposals per minute. A well-formed proposal is counted with
 * its first read instead (edge/pipeline/agent-entry.ts).
 * @throws DomainError('rate_limited') with Retry-After.
 */
export async function admitProposal(ports: Ports, principal: Principal): Promise<void> {
  return admit(ports, proposalGates(ports, principal));
}
