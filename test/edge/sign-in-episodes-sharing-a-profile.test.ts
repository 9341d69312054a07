import { env } from 'cloudflare:test';
import { eq } from 'drizzle-orm';
import { beforeEach, describe, expect, it } from 'vitest';
import { type CeremonyEventClaims, signCeremonyEvent } from '../../shared/authentication.ts';
import * as schema from '../../edge/db/schema.ts';
import type { HostConnector, HostSession } from '../../edge/host/host-session.ts';
import type { Ports } from '../../edge/ports.ts';
import { reconcileSignIns } from '../../edge/sign-in/maintenance.ts';
import { parkForSignIn } from '../../edge/sign-in/park.ts';
import { type Parties, call, seedParties, workerdPorts } from './edge-client.ts';

// Second review pass (ADR-0164 part 3: "exactly one interruption per unresolved sign-in episode,
// while requiring eventual completion or an explicit bounded stop"). The host ends the older
// ceremony of a profile when a newer one begins on it (browser-host/ceremony.ts, `#begin`). With
// two episodes of one profile on two origins, the ended one is never begun again by the
// maintenance pass (it only begins ceremonies the host answers `unknown` for), so its run waits,
// with an unresolved notice and no sign-in window, until its deadline.
// Reproduced in real processes by /tmp/review/host-restart.ts (scenario 2): the host restarts,
// the cron pass begins the lost ceremony of origin A, which ends the live one of origin B.

const A = 'http://127.0.0.1:8131';
const B = 'http://127.0.0.1:8132';

const ports = (host?: HostConnector): Ports => workerdPorts(host);

/**
 * A stand-in for browser-host/ceremony.ts's bookkeeping: a begin of an unknown ceremony ends
 * (final outcome `ended`, with a signed event) every open ceremony of the same profile; status
 * answers `unknown` for ceremonies it never saw (a restarted host), else the state and, once
 * final, the event.
 */
function standInHost() {
  const records = new Map<string, { params: Record<string, unknown>; state: string; claims?: CeremonyEventClaims }>();
  const begins: Record<string, unknown>[] = [];
  let serial = 0;
  const finish = (id: string, outcome: 'ended' | 'verified') => {
    const record = records.get(id)!;
    record.state = outcome;
    record.claims = {
      event_id: `cev_standin${Date.now()}${++serial}`,
      ceremony_id: id,
      host_id: 'host-standin',
      profile_id: String(record.params.profile_id),
      origin: String(record.params.origin),
      generation: Number(record.params.generation),
      outcome,
      method: 'differential',
      decided_at_ms: Date.now(),
    };
  };
  const answer = async (id: string) => {
    const record = records.get(id);
    if (!record) return { ceremony_id: id, state: 'unknown' };
    return { ceremony_id: id, state: record.state, ...(record.claims ? { event: await signCeremonyEvent(env.HOST_SHARED_SECRET, record.claims) } : {}) };
  };
  const connector: HostConnector = {
    connect: async () =>
      ({
        call: async (method: string, params: Record<string, unknown>) => {
          const id = String(params.ceremony_id);
          if (method === 'ceremony.begin') {
            begins.push(params);
            if (!records.has(id)) {
              for (const [other, record] of records) {
                if (record.claims === undefined && record.params.profile_id === params.profile_id) finish(other, 'ended');
              }
              records.set(id, { params, state: 'awaiting_person' });
            }
            return answer(id);
          }
          if (method === 'ceremony.status') return answer(id);
          if (method === 'ceremony.end') {
            const record = records.get(id);
            if (!record || record.claims) return { ended: false };
            finish(id, 'ended');
            return { ended: true };
          }
          throw new Error(`unexpected ${method}`);
        },
        close: () => {},
      }) as unknown as HostSession,
  };
  return {
    connector,
    begins,
    /** The host restarts: it forgets every ceremony. */
    restart: () => records.clear(),
    /** The person signs in and the host verifies: the event (its delivery is lost). */
    verify: (id: string) => finish(id, 'verified'),
  };
}

let parties: Parties;
beforeEach(async () => {
  parties = await seedParties();
});

async function runningRun(origin: string) {
  const created = await call('POST', '/v1/runs', { token: parties.owner.token, body: { profile_id: 'shared', intent: 'read my reports', origins: [origin] } });
  expect(created.status).toBe(201);
  await call('POST', `/v1/runs/${created.body.id}/tool-calls`, { token: parties.agent.token, body: { tool: 'browser.observe', version: '1.2.0', arguments: {} } });
  const run = await ports().db.select().from(schema.runs).where(eq(schema.runs.id, created.body.id)).get();
  expect(run?.state).toBe('running');
  return run!;
}

async function wall(run: schema.RunRow, origin: string, p: Ports) {
  await parkForSignIn(p, run, { signal: { origin, evidence: 'password_field' }, signInUrl: `${origin}/signin`, protectedUrl: `${origin}/reports`, toolCallId: 'call_test' });
}

async function episodeOf(origin: string) {
  return env.DB.prepare("SELECT * FROM sign_in_episodes WHERE owner_id = ? AND profile_id = 'shared' AND origin = ? AND state = 'open'")
    .bind(parties.owner.id, origin)
    .first<{ id: string; ceremony_id: string; generation: number }>();
}

const stateOf = async (runId: string) => (await env.DB.prepare('SELECT state FROM runs WHERE id = ?').bind(runId).first<{ state: string }>())?.state;

describe('two sign-in episodes of one profile on two origins', () => {
  it('after the person signs in to one origin, the other episode, whose ceremony the host ended for it, gets its sign-in window again and its run resumes', async () => {
    const host = standInHost();
    const p = ports(host.connector);
    const ra = await runningRun(A);
    await wall(ra, A, p); // ceremony A begins
    host.restart(); // the host process is restarted: ceremony A is lost
    const rb = await runningRun(B);
    await wall(rb, B, p); // ceremony B begins on the new host
    await reconcileSignIns(p); // A is `unknown`: begun again; B waits for the profile's window
    const beginsBefore = host.begins.length;

    // The person signs in to A (its window is the one shown); the delivery is lost, the cron finds it.
    host.verify((await episodeOf(A))!.ceremony_id);
    await reconcileSignIns(p);
    expect(await stateOf(ra.id)).toBe('queued');

    // B's run still waits; its window must come (begun on the host once A's sign-in is done).
    for (let pass = 0; pass < 3; pass++) await reconcileSignIns(p);
    const episodeB = await episodeOf(B);
    expect(episodeB).not.toBeNull();
    const rebegun = host.begins.slice(beginsBefore).filter((params) => params.origin === B);
    expect(rebegun.length).toBeGreaterThan(0);
    // ... and once the person signs in to B, the run resumes.
    host.verify(String(rebegun.at(-1)!.ceremony_id));
    await reconcileSignIns(p);
    expect(await stateOf(rb.id)).toBe('queued');
  });
});
