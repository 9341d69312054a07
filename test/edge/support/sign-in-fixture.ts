import { env } from 'cloudflare:test';
import { eq } from 'drizzle-orm';
import { expect } from 'vitest';
import * as schema from '../../../edge/db/schema.ts';
import type { Ports } from '../../../edge/ports.ts';
import { parkForSignIn } from '../../../edge/sign-in/park.ts';
import type { CeremonyEventReceipt, NoticeList, RunView } from '../../../shared/api.ts';
import { type CeremonyEventClaims, signCeremonyEvent } from '../../../shared/authentication.ts';
import { backgroundSettled, call, type Parties, row, workerdPorts } from './edge-client.ts';

/**
 * Sign-in waits against the real D1 in workerd: runs that meet a sign-in wall (parked as dispatch
 * parks them), their open episodes, and ceremony outcomes signed as the host signs them and
 * delivered on the callback route. The host is the bindings' closed port unless a stand-in from
 * fake-host.ts is passed.
 */

/** The origin of the site behind the sign-in wall. */
export const ORIGIN = 'http://127.0.0.1:8123';
/** An app origin a navigation may start on before a redirect to ORIGIN. */
export const APP = 'http://127.0.0.1:8124';

/** An open sign-in episode as its D1 row. */
export interface OpenEpisode {
  id: string;
  ceremony_id: string;
  generation: number;
  host_profile_id: string;
  origin: string;
  protected_url: string;
  /** The host's last reported ceremony state, or null before the host answered. */
  ceremony_state: string | null;
}

/** Who a ceremony event is about: enough of an episode to sign claims for it. */
export interface CeremonyTarget {
  ceremony_id: string;
  generation: number;
  host_profile_id: string;
  origin?: string;
}

let serial = 0;
/** Tells this file's event ids from another file's made in the same millisecond. */
const fileTag = crypto.randomUUID().slice(0, 8);

/** The claims of a verified differential ceremony outcome for `episode`, as the host writes them. */
export function claimsFor(episode: CeremonyTarget, overrides: Partial<CeremonyEventClaims> = {}): CeremonyEventClaims {
  serial += 1;
  return {
    event_id: `cev_test${fileTag}${Date.now()}${serial}`,
    ceremony_id: episode.ceremony_id,
    host_id: 'host-1',
    profile_id: episode.host_profile_id,
    origin: episode.origin ?? ORIGIN,
    generation: episode.generation,
    outcome: 'verified',
    method: 'differential',
    decided_at_ms: Date.now(),
    ...overrides,
  };
}

/** A host-signed event: `episode` verified by the site's definition (account `a...a`), unless `overrides` say otherwise. */
export function definitionEvent(episode: CeremonyTarget, overrides: Partial<CeremonyEventClaims> = {}): Promise<string> {
  return signCeremonyEvent(
    env.HOST_SHARED_SECRET,
    claimsFor(
      { ...episode, origin: ORIGIN },
      { method: 'definition', definition: { id: 'fixture-reports', version: 1 }, account_sha256: 'a'.repeat(64), ...overrides },
    ),
  );
}

/** Delivers a host-signed ceremony event on the callback route. */
export function deliver(event: string) {
  return call<CeremonyEventReceipt>('POST', '/v1/host/ceremony-events', { body: { event } });
}

/** The fixture's helpers over `parties` (see `partiesForEachTest`). */
export function signInFixture(parties: Parties) {
  const ports = (): Ports => workerdPorts();

  /** An owner's run, claimed by the agent (its first proposal), so it is `running`. */
  async function runningRun(options: { profile?: string; origins?: string[]; deadlineMs?: number; intent?: string } = {}): Promise<schema.RunRow> {
    const { profile = 'me', origins = [ORIGIN], deadlineMs, intent = 'file the weekly report' } = options;
    const created = await call<RunView>('POST', '/v1/runs', {
      token: parties.owner.token,
      body: { profile_id: profile, intent, origins, ...(deadlineMs ? { deadline_ms: deadlineMs } : {}) },
    });
    expect(created.status).toBe(201);
    await call('POST', `/v1/runs/${created.body.id}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.observe', version: '1.2.0', arguments: {} },
    });
    const run = await ports().db.select().from(schema.runs).where(eq(schema.runs.id, created.body.id)).get();
    expect(run?.state).toBe('running');
    return run!;
  }

  /**
   * Parks `run` as dispatch does when the host says the page on `origin` asks for sign-in, and
   * waits for the ceremony start it hands to the background.
   */
  async function hitSignInWall(run: schema.RunRow, options: { origin?: string; ports?: Ports; signInUrl?: string } = {}): Promise<void> {
    const { origin = ORIGIN, ports: p = ports(), signInUrl = `${origin}/signin?next=/reports` } = options;
    await parkForSignIn(p, run, {
      signal: { origin, reasons: [{ code: 'password_field', detail: 'a visible password field' }] },
      signInUrl,
      protectedUrl: `${origin}/reports`,
      toolCallId: 'call_test',
    });
    // The ceremony begins after the park answered, as it does after a proposal: wait for it.
    await backgroundSettled();
  }

  /** The owner's open episode of `profile` on `origin`. */
  async function openEpisode(profile = 'me', origin = ORIGIN): Promise<OpenEpisode> {
    return (await row(
      "SELECT * FROM sign_in_episodes WHERE owner_id = ? AND profile_id = ? AND origin = ? AND state = 'open'",
      parties.owner.id,
      profile,
      origin,
    )) as unknown as OpenEpisode;
  }

  /** The run as its owner reads it. */
  async function runState(id: string): Promise<RunView> {
    return (await call<RunView>('GET', `/v1/runs/${id}`, { token: parties.owner.token })).body;
  }

  /** The owner's notices. */
  async function notices(): Promise<NoticeList['notices']> {
    return (await call<NoticeList>('GET', '/v1/notices', { token: parties.owner.token })).body.notices;
  }

  async function noticeCount(): Promise<number> {
    return (await notices()).length;
  }

  return { ports, runningRun, hitSignInWall, openEpisode, runState, notices, noticeCount };
}
