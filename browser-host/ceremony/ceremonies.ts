import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { type CeremonyEventClaims, type CeremonyOutcome, signCeremonyEvent } from '../../shared/authentication.ts';
import { httpOrigin } from '../../shared/origin.ts';
import { Deadline } from '../deadline.ts';
import { HostError } from '../host-error.ts';
import type { ProfileBrowser } from '../profile-browser.ts';
import type { SiteCatalog } from '../site-verification/catalog.ts';
import type { VerificationResult } from '../site-verification/verify.ts';
import { deliverCeremonyEvent } from './delivery.ts';
import { pollCeremony, RECHECK_MS, verifyCeremony } from './polling.ts';
import type { BeginParams, Ceremony, CeremonyAnswer, CeremonyServices } from './record.ts';
import { ceremonyOriginsOf, returnWindow, showSignIn, visitedOrigins } from './window.ts';

export type { CeremonyServices } from './record.ts';

/** Ceremony records kept in memory; the oldest finished ones are forgotten first. */
const MAX_RECORDS = 256;
/** Highest generations remembered per profile and origin (to refuse stale begins). */
const MAX_GENERATIONS = 4_096;
/** Longest the session check of a begin may take, in ms (lock, reservation, loads, cleanup). */
const INITIAL_CHECK_MS = 20_000;
/** Longest host shutdown waits for ceremonies and deliveries to wind down, in ms. */
const CLOSE_MS = 15_000;

/**
 * Sign-in ceremonies (ADR-0164 parts 2-3; shared/authentication.ts `CEREMONY_METHODS`): the
 * owner's native sign-in in the profile's headed browser, verified by the host and reported as a
 * signed outcome event. Records live in memory (at most 256; a restarted host answers `unknown`).
 *
 * A ceremony holds its profile through admission, like a lease, from `begin` until its final
 * outcome, so no agent lease is granted while the person signs in; the browser stays open after.
 * Final outcomes: `verified`, `account_mismatch`, `not_verified` (at `timeout_ms`) and `ended`
 * (`ceremony.end`, a newer ceremony on the profile, a stale generation). `challenge` is a state,
 * not an outcome: polling goes on, the person may still pass it.
 */
export class Ceremonies {
  readonly #services: CeremonyServices;
  readonly #records = new Map<string, Ceremony>();
  readonly #generations = new Map<string, number>();
  /** Deliveries and begins in flight, which shutdown waits for. */
  readonly #work = new Set<Promise<void>>();
  readonly #closing = new AbortController();

  constructor(services: CeremonyServices) {
    this.#services = services;
  }

  /** Ceremonies waiting for a person or being verified. */
  get open(): number {
    let open = 0;
    for (const record of this.#records.values()) if (record.claims === undefined) open += 1;
    return open;
  }

  /**
   * `ceremony.begin`. A known `ceremony_id` answers its current state. Otherwise: a generation
   * older than one already begun for the profile and origin is fenced at once (`ended`); a newer
   * one ends any open ceremony on the profile. Then any live lease on the profile is interrupted
   * (its next command fails `lease_lost`), the profile is held through admission (ahead of agents
   * waiting for it), and the profile's session is verified first: `verified` (or
   * `account_mismatch`) answers at once with the event, without showing the sign-in page (valid
   * sessions are reused). Otherwise the profile's page shows `sign_in_url`, the answer is
   * `awaiting_person` (or `challenge`), and the surface is polled every `pollMs` until an
   * outcome or `timeout_ms`.
   * @throws HostError('invalid_params') when `protected_url` is not an http(s) URL of `origin`
   *   (`sign_in_url` may be on another origin, e.g. an identity provider), or the id
   *   is known with other parameters; HostError('admission_full' | 'host_unavailable') when the
   *   profile cannot be held (no ceremony is recorded then).
   */
  begin(params: BeginParams): Promise<CeremonyAnswer> {
    if (this.#closing.signal.aborted) return Promise.reject(new HostError('host_unavailable', 'the host is shutting down'));
    // Tracked, so shutdown waits for a begin's session check to clean up after itself.
    const beginning = this.#begin(params);
    const tracked = beginning.then(
      () => {},
      () => {},
    );
    this.#work.add(tracked);
    void tracked.finally(() => this.#work.delete(tracked));
    return beginning;
  }

  async #begin(params: BeginParams): Promise<CeremonyAnswer> {
    const known = this.#records.get(params.ceremony_id);
    if (known !== undefined) {
      const same = known.params.profile_id === params.profile_id && known.params.origin === params.origin && known.params.generation === params.generation;
      if (!same) throw new HostError('invalid_params', 'ceremony_id: already begun for another profile, origin or generation');
      return this.#answer(known);
    }
    // The sign-in page may be on another origin (an identity provider the site sends people to);
    // the page that proves the sign-in is on the ceremony's origin.
    if (httpOrigin(params.sign_in_url) === undefined) throw new HostError('invalid_params', 'sign_in_url: must be an http(s) URL');
    checkSameOrigin(params.protected_url, params.origin, 'protected_url');

    const record: Ceremony = {
      params,
      state: 'verifying',
      claims: undefined,
      life: Deadline.after(params.timeout_ms),
      hold: undefined,
      method: 'none',
      checkedUrl: undefined,
      checkedAt: 0,
      recheckMs: RECHECK_MS,
      loop: undefined,
      window: undefined,
      visited: [],
      notices: [],
      notify: (sentence) => this.#services.onNotice?.(params.ceremony_id, sentence),
    };
    this.#records.set(params.ceremony_id, record);
    this.#prune();

    const generationKey = `${params.profile_id} ${params.origin.toLowerCase()}`;
    const highest = this.#generations.get(generationKey) ?? 0;
    if (params.generation < highest) {
      this.#finish(record, 'ended');
      return this.#answer(record);
    }
    this.#generations.delete(generationKey);
    this.#generations.set(generationKey, params.generation);
    if (this.#generations.size > MAX_GENERATIONS) this.#generations.delete(this.#generations.keys().next().value as string);

    // Ask for the profile first, ahead of agents, then free it: the older ceremony and any lease.
    const admitted = this.#services.admission.admit(params.profile_id, this.#services.admissionWaitMs, { first: true });
    for (const other of this.#records.values()) {
      if (other !== record && other.claims === undefined && other.params.profile_id === params.profile_id) this.#finish(other, 'ended');
    }
    this.#services.leases.interruptProfile(params.profile_id);
    let browser: ProfileBrowser;
    try {
      browser = await admitted;
    } catch (error) {
      record.life.dispose();
      this.#records.delete(params.ceremony_id);
      throw error;
    }
    if (record.claims !== undefined) {
      this.#services.admission.release(params.profile_id);
      return this.#answer(record);
    }
    record.hold = browser;
    // The session check may load the site's sign-in page, on its own or an identity provider's
    // origin; the window follows the person's sign-in further only once it is shown (showSignIn).
    browser.confinement.ceremonyOrigins = ceremonyOriginsOf(params);

    const check = await verifyCeremony(record, browser, this.#services.verifier, INITIAL_CHECK_MS);
    if (check?.outcome === 'verified' || check?.outcome === 'account_mismatch') {
      this.#finish(record, check.outcome, check);
      return this.#answer(record);
    }
    // Ended meanwhile (ceremony.end, a newer ceremony): its window was taken back already.
    if (record.claims !== undefined) return this.#answer(record);
    await showSignIn(record, browser);
    if (record.claims === undefined && record.life.expired) this.#finish(record, 'not_verified');
    if (record.claims === undefined) {
      record.state = check?.outcome === 'challenge' ? 'challenge' : 'awaiting_person';
      record.loop = pollCeremony(record, this.#services, (ceremony, outcome, result) => this.#finish(ceremony, outcome, result));
    }
    return this.#answer(record);
  }

  /** `ceremony.status`: the state and, once final, the event signed afresh (same claims, same id). */
  async status(ceremonyId: string): Promise<CeremonyAnswer> {
    const record = this.#records.get(ceremonyId);
    if (record === undefined) return { ceremony_id: ceremonyId, state: 'unknown' };
    return this.#answer(record);
  }

  /**
   * The page a person signs in on for the open ceremony `ceremonyId`, for its live view; only
   * while the ceremony is still for `profileId`, `origin` and `generation` and waits for a person.
   * @throws HostError('not_found') otherwise (unknown, over, another generation, no page).
   */
  surfaceOf(ceremonyId: string, profileId: string, origin: string, generation: number): Page {
    const record = this.#records.get(ceremonyId);
    const matches =
      record !== undefined &&
      record.claims === undefined &&
      record.params.profile_id === profileId &&
      record.params.origin.toLowerCase() === origin.toLowerCase() &&
      record.params.generation === generation &&
      (record.state === 'awaiting_person' || record.state === 'challenge');
    const page = matches ? record.hold?.openPage : undefined;
    if (page === undefined) throw new HostError('not_found', 'no ceremony of that profile, origin and generation waits for a person now');
    return page;
  }

  /** `ceremony.end`: ends an open ceremony (`ended`); false when unknown or already over. */
  end(ceremonyId: string): boolean {
    const record = this.#records.get(ceremonyId);
    if (record === undefined || record.claims !== undefined) return false;
    this.#finish(record, 'ended');
    return true;
  }

  /** Ends every open ceremony of `profileId` (`ended`: its placement went stale); returns how many. */
  endProfile(profileId: string): number {
    let ended = 0;
    for (const record of this.#records.values()) {
      if (record.claims !== undefined || record.params.profile_id !== profileId) continue;
      this.#finish(record, 'ended');
      ended += 1;
    }
    return ended;
  }

  /**
   * Host shutdown: at once (before the returned promise settles), every open ceremony ends as
   * `ended` without a delivery, and polling, verifications and pending deliveries are told to
   * stop; the promise resolves when they have wound down (at most 15 s). The caller closes
   * admission meanwhile, so nothing waits for a browser. Idempotent.
   */
  async close(): Promise<void> {
    this.#closing.abort();
    const loops: Promise<void>[] = [];
    for (const record of this.#records.values()) {
      if (record.claims === undefined) this.#finish(record, 'ended');
      if (record.loop !== undefined) loops.push(record.loop);
    }
    // Whatever still runs after the grace period is cut off by the browsers closing.
    await Deadline.waitAtMost(CLOSE_MS, Promise.all([...loops, ...this.#work]));
  }

  /**
   * Gives the ceremony its final outcome, once: the event claims (stable `event_id`), the hold on
   * the profile released (the browser stays open), everything under the ceremony's deadline
   * aborted, and the event delivered to the edge in the background.
   */
  #finish(record: Ceremony, outcome: CeremonyOutcome, result?: VerificationResult): void {
    if (record.claims !== undefined) return;
    const { params } = record;
    const definition = result?.definition ?? definitionRef(this.#services.catalog, params.origin);
    record.claims = {
      event_id: `cev_${randomBytes(16).toString('base64url')}`,
      ceremony_id: params.ceremony_id,
      host_id: this.#services.hostId,
      profile_id: params.profile_id,
      origin: params.origin,
      generation: params.generation,
      outcome,
      method: result?.method ?? record.method,
      ...(definition !== undefined ? { definition } : {}),
      ...(result?.account_sha256 !== undefined ? { account_sha256: result.account_sha256 } : {}),
      decided_at_ms: Date.now(),
    };
    const visited = visitedOrigins(record, record.hold);
    if (visited.length > 0) record.claims.visited_origins = visited;
    record.state = outcome;
    record.life.dispose();
    const { admission } = this.#services;
    const hold = record.hold;
    record.hold = undefined;
    // The profile goes back to admission once its window is taken back from the person.
    const release = (): void => {
      if (hold !== undefined && admission.browserOf(params.profile_id) === hold) admission.release(params.profile_id);
    };
    if (hold === undefined) release();
    else this.#track(returnWindow(record, hold, release));
    if (!this.#closing.signal.aborted && this.#services.edgeUrl !== undefined) this.#deliver(this.#services.edgeUrl, record.claims);
    this.#services.onFinished?.(params.ceremony_id, outcome);
    this.#prune();
  }

  #deliver(edgeUrl: string, claims: CeremonyEventClaims): void {
    this.#track(deliverCeremonyEvent(edgeUrl, this.#services.sharedSecret, claims, this.#closing.signal));
  }

  /** Work that shutdown waits for. */
  #track(work: Promise<void>): void {
    this.#work.add(work);
    void work.finally(() => this.#work.delete(work));
  }

  /** The sentences told to the person of ceremony `ceremonyId` so far (for a live view opened later). */
  noticesOf(ceremonyId: string): readonly string[] {
    return this.#records.get(ceremonyId)?.notices ?? [];
  }

  async #answer(record: Ceremony): Promise<CeremonyAnswer> {
    const answer: CeremonyAnswer = { ceremony_id: record.params.ceremony_id, state: record.state };
    if (record.claims !== undefined) answer.event = await signCeremonyEvent(this.#services.sharedSecret, record.claims);
    return answer;
  }

  /** Forgets the oldest finished records beyond {@link MAX_RECORDS}. */
  #prune(): void {
    let excess = this.#records.size - MAX_RECORDS;
    for (const [id, record] of this.#records) {
      if (excess <= 0) return;
      if (record.claims === undefined) continue;
      this.#records.delete(id);
      excess -= 1;
    }
  }
}

function definitionRef(catalog: SiteCatalog, origin: string): { id: string; version: number } | undefined {
  const definition = catalog.forOrigin(origin);
  return definition === undefined ? undefined : { id: definition.id, version: definition.version };
}

/** @throws HostError('invalid_params') unless `url` is an http(s) URL of `origin`. */
function checkSameOrigin(url: string, origin: string, field: string): void {
  if (httpOrigin(url) !== origin.toLowerCase()) throw new HostError('invalid_params', `${field}: must be an http(s) URL of ${origin}`);
}
