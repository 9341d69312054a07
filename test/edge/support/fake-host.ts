import { env } from 'cloudflare:test';
import { HostCallError, type HostConnector, type HostSession } from '../../../edge/host/host-session.ts';
import { type CeremonyEventClaims, signCeremonyEvent } from '../../../shared/authentication.ts';

/**
 * Stand-ins for the browser host, for pipeline functions called directly over the real D1 (see
 * `workerdPorts`). Where no stand-in is given the host is the bindings' closed port.
 */

type Params = Record<string, unknown>;

/** The id a stand-in host announces in its hello, as a real host signs its `HOST_ID`. */
export const STAND_IN_HOST_ID = 'host-stand-in';

/** A host connector whose every session answers `call` with `answer`. */
function connectorOf(answer: (method: string, params: Params) => unknown): HostConnector {
  return {
    connect: async () =>
      ({
        hostId: STAND_IN_HOST_ID,
        call: async (method: string, params: Params) => answer(method, params),
        close: () => {},
      }) as unknown as HostSession,
  };
}

/** What a stand-in host answers a page command with: a settled observation of `url` at `revision`, one landmark. */
export function hostPage(url: string, revision: number) {
  return {
    revision,
    url,
    title: 'Reports',
    settle: { outcome: 'dom_quiet', elapsed_ms: 0, pending_at_entry: 0, overflow: false },
    window: { scope: { start_node: 0, end_node: 1, total_nodes: 1 }, truncated: false },
    snapshot: '- main [ref=e1]',
  };
}

/** A stand-in host: `answer` serves every command; the commands it got are kept in `calls`. */
export function scriptedHost(answer: (method: string, params: Params) => unknown | Promise<unknown>) {
  const calls: { method: string; params: Params }[] = [];
  const connector = connectorOf((method, params) => {
    calls.push({ method, params });
    return answer(method, params);
  });
  return { connector, calls };
}

/** What the host checks of a begin: the protected page is on the ceremony's origin; the sign-in page may be elsewhere (an identity provider). */
export function hostBeginChecks(params: Params): void {
  if (new URL(String(params.protected_url)).origin !== String(params.origin).toLowerCase()) {
    throw new HostCallError('invalid_params', `protected_url: must be an http(s) URL of ${params.origin}`);
  }
  if (!/^https?:$/.test(new URL(String(params.sign_in_url)).protocol)) throw new HostCallError('invalid_params', 'sign_in_url: must be http(s)');
}

/**
 * A stand-in for the host's ceremony bookkeeping: a begin of an unknown ceremony ends (final
 * outcome `ended`, with a signed event) every open ceremony of the same profile, then checks the
 * saved session (`verifying`) and waits for the person (`awaiting_person`); status answers
 * `unknown` for ceremonies it never saw (a restarted host), else the state and, once final, the
 * event.
 */
export function ceremonyBookkeepingHost() {
  const records = new Map<string, { params: Params; state: string; claims?: CeremonyEventClaims }>();
  const begins: Params[] = [];
  const slowProfiles = new Set<string>();
  let release: () => void = () => {};
  const sessionCheck = new Promise<void>((resolve) => {
    release = resolve;
  });
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
  const connector = connectorOf(async (method, params) => {
    const id = String(params.ceremony_id);
    if (method === 'ceremony.begin') {
      begins.push(params);
      if (!records.has(id)) {
        for (const [other, record] of records) {
          if (record.claims === undefined && record.params.profile_id === params.profile_id) finish(other, 'ended');
        }
        records.set(id, { params, state: 'verifying' });
        // The host checks the saved session first; for a slow profile that takes until `release`.
        if (slowProfiles.has(String(params.profile_id))) await sessionCheck;
        const record = records.get(id);
        if (record && record.claims === undefined) record.state = 'awaiting_person';
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
  });
  return {
    connector,
    begins,
    /** The host restarts: it forgets every ceremony. */
    restart: () => records.clear(),
    /** The person signs in and the host verifies: the event (its delivery is lost). */
    verify: (id: string) => finish(id, 'verified'),
    /** Begins of a new ceremony of host profile `profileId` answer only after `release` (a slow saved-session check). */
    slowSessionCheckFor: (profileId: string) => slowProfiles.add(profileId),
    /** Lets the slow session checks finish. */
    release: () => release(),
  };
}
