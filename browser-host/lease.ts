import { randomBytes } from 'node:crypto';
import type { LeaseGrant } from '../shared/protocol.ts';
import { Deadline } from './deadline.ts';
import { HostError } from './host-error.ts';

/** Why a lease stopped being live. */
export type LeaseEnd = 'released' | 'expired' | 'interrupted';

/**
 * A run's hold on one profile's browser (DESIGN.md section 6): its id, the profile, the
 * per-profile generation (1 for the profile's first lease, +1 for each new one), the epoch-ms
 * expiry and whether it was interrupted (a person took the browser over, or it went away).
 */
export interface Lease {
  readonly lease_id: string;
  readonly profile_id: string;
  readonly generation: number;
  readonly expires_at_ms: number;
  readonly interrupted: boolean;
}

interface LiveLease {
  lease_id: string;
  profile_id: string;
  /** The run that asked for it (the edge's run id). */
  run_id: string;
  generation: number;
  expires_at_ms: number;
  interrupted: boolean;
  /** Cancels the expiry timer. */
  disarm: () => void;
}

/** What the lease table is told and asked. */
export interface LeaseTableOptions {
  /** Called once when a lease stops being live, whatever the reason; frees its profile. */
  readonly onEnded: (lease: Lease, why: LeaseEnd) => void;
}

/**
 * The live leases of this host. A lease ends when released, when its TTL lapses (a timer wakes
 * admission then; every check also compares the clock, so a late timer never extends a lease) or
 * when interrupted; an ended lease is forgotten, so every later use fails `lease_lost`.
 */
export class LeaseTable {
  readonly #onEnded: LeaseTableOptions['onEnded'];
  readonly #leases = new Map<string, LiveLease>();
  readonly #generations = new Map<string, number>();

  constructor(options: LeaseTableOptions) {
    this.#onEnded = options.onEnded;
  }

  /** Live leases. */
  get live(): number {
    return this.#leases.size;
  }

  /** Whether `leaseId` is live now (released, expired, interrupted and unknown leases are not). */
  isLive(leaseId: string): boolean {
    const lease = this.#leases.get(leaseId);
    return lease !== undefined && Date.now() < lease.expires_at_ms;
  }

  /**
   * A new lease on `profileId` for run `runId` and `ttlMs` ms, with the profile's next
   * generation. The caller must already hold the profile through admission.
   */
  grant(profileId: string, ttlMs: number, runId: string): LeaseGrant {
    const generation = (this.#generations.get(profileId) ?? 0) + 1;
    this.#generations.set(profileId, generation);
    const lease: LiveLease = {
      lease_id: `lease_${randomBytes(12).toString('base64url')}`,
      profile_id: profileId,
      run_id: runId,
      generation,
      expires_at_ms: 0,
      interrupted: false,
      disarm: () => {},
    };
    this.#leases.set(lease.lease_id, lease);
    this.#arm(lease, ttlMs);
    return grantOf(lease);
  }

  /**
   * The live lease `leaseId`. Every page operation calls this first.
   * @throws HostError('lease_lost') when the lease is unknown, released, expired or interrupted.
   */
  check(leaseId: string): Lease {
    const lease = this.#leases.get(leaseId);
    if (lease && Date.now() >= lease.expires_at_ms) this.#end(lease, 'expired');
    if (!lease || !this.#leases.has(leaseId))
      throw new HostError('lease_lost', 'the lease is unknown, released, expired or interrupted; nothing was dispatched');
    return leaseOf(lease);
  }

  /**
   * Extends a live lease to `ttlMs` ms from now.
   * @throws HostError('lease_lost') as {@link check}.
   */
  renew(leaseId: string, ttlMs: number): LeaseGrant {
    this.check(leaseId);
    const lease = this.#leases.get(leaseId) as LiveLease;
    this.#arm(lease, ttlMs);
    return grantOf(lease);
  }

  /** Ends a live lease; false when it was not live (already released, expired or unknown). */
  release(leaseId: string): boolean {
    const lease = this.#leases.get(leaseId);
    if (!lease) return false;
    if (Date.now() >= lease.expires_at_ms) {
      this.#end(lease, 'expired');
      return false;
    }
    this.#end(lease, 'released');
    return true;
  }

  /**
   * Ends the live lease that run `runId` holds on `profileId`, if any, as released. A run asks
   * for a new lease only when it has none it knows of, e.g. after the answer to an earlier
   * acquisition was lost; its orphan must not keep the profile from it until the TTL lapses.
   * The edge sends one command per run at a time, so no operation of that run is in flight.
   * @returns true when a lease was ended.
   */
  releaseHeldBy(profileId: string, runId: string): boolean {
    let ended = false;
    for (const lease of [...this.#leases.values()]) {
      if (lease.profile_id !== profileId || lease.run_id !== runId) continue;
      this.#end(lease, 'released');
      ended = true;
    }
    return ended;
  }

  /** The live lease on `profileId` held for another run than `runId`: that run and the lease's epoch-ms expiry. */
  heldByAnother(profileId: string, runId: string): { run_id: string; expires_at_ms: number } | undefined {
    for (const lease of this.#leases.values()) {
      if (lease.profile_id === profileId && lease.run_id !== runId) return { run_id: lease.run_id, expires_at_ms: lease.expires_at_ms };
    }
    return undefined;
  }

  /** Ends the live lease on `profileId`, if any, as interrupted. */
  interruptProfile(profileId: string): void {
    for (const lease of [...this.#leases.values()]) {
      if (lease.profile_id !== profileId) continue;
      lease.interrupted = true;
      this.#end(lease, 'interrupted');
    }
  }

  /** Ends every lease (host shutdown) without calling back. */
  clear(): void {
    for (const lease of this.#leases.values()) lease.disarm();
    this.#leases.clear();
  }

  #arm(lease: LiveLease, ttlMs: number): void {
    lease.expires_at_ms = Date.now() + ttlMs;
    this.#schedule(lease, ttlMs);
  }

  /** Wakes up after `delayMs` to end the lease if the clock says it has lapsed by then. */
  #schedule(lease: LiveLease, delayMs: number): void {
    lease.disarm();
    const expiry = Deadline.after(delayMs);
    const onExpiry = (): void => {
      if (this.#leases.get(lease.lease_id) !== lease) return;
      const left = lease.expires_at_ms - Date.now();
      if (left <= 0) this.#end(lease, 'expired');
      else this.#schedule(lease, left);
    };
    expiry.signal.addEventListener('abort', onExpiry, { once: true });
    lease.disarm = () => {
      expiry.signal.removeEventListener('abort', onExpiry);
      expiry.dispose();
    };
  }

  #end(lease: LiveLease, why: LeaseEnd): void {
    if (this.#leases.get(lease.lease_id) !== lease) return;
    lease.disarm();
    this.#leases.delete(lease.lease_id);
    this.#onEnded(leaseOf(lease), why);
  }
}

function leaseOf(lease: LiveLease): Lease {
  return { ...grantOf(lease), interrupted: lease.interrupted };
}

function grantOf(lease: LiveLease): LeaseGrant {
  return { lease_id: lease.lease_id, profile_id: lease.profile_id, generation: lease.generation, expires_at_ms: lease.expires_at_ms };
}
