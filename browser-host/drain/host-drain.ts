import type { HostResult } from '../../shared/protocol.ts';
import type { Admission } from '../admission.ts';
import type { Ceremonies } from '../ceremony/ceremonies.ts';
import { Deadline } from '../deadline.ts';
import { HostError } from '../host-error.ts';
import type { LeaseTable } from '../lease.ts';
import type { ProfileSnapshots } from '../profile-snapshot/snapshots.ts';

/** What `host.drain` answers (shared/protocol.ts). */
export type DrainProgress = HostResult<'host.drain'>;

/** What a drain works with. */
export interface HostDrainOptions {
  readonly hostId: string;
  readonly admission: Admission;
  readonly leases: LeaseTable;
  readonly ceremonies: Ceremonies;
  readonly snapshots: ProfileSnapshots;
}

/** Spacing of the checks while something waits for the drain to finish, in ms. */
const SWEEP_MS = 250;

/**
 * Draining a host before it stops (issue 32, DESIGN.md section 17): once {@link start}ed, the host
 * admits nothing new (`lease.acquire` and `ceremony.begin` fail `host_draining`, and requests
 * already waiting for a browser fail so too), live leases and ceremonies finish as they would
 * (release, expiry, outcome), each profile is snapshotted as its hold ends (idle ones at once)
 * and its browser closed once its snapshot is written or given up. Drained: nothing held, open,
 * reserved or being written. The edge places the profiles elsewhere on their next lease.
 */
export class HostDrain {
  readonly #options: HostDrainOptions;
  #draining = false;

  constructor(options: HostDrainOptions) {
    this.#options = options;
  }

  /** True once draining began; it never ends (a drained host is stopped, not resumed). */
  get draining(): boolean {
    return this.#draining;
  }

  /** @throws HostError('host_draining') once draining began: what `lease.acquire` and `ceremony.begin` answer. */
  refuseWhileDraining(): void {
    if (this.#draining) throw new HostError('host_draining', `host ${this.#options.hostId} is draining: it takes no new leases or sign-in ceremonies`);
  }

  /**
   * Starts draining (idempotent; see the class) and closes what is idle already.
   * @returns the progress, as `host.drain` answers it.
   */
  start(): DrainProgress {
    const { admission, snapshots } = this.#options;
    if (!this.#draining) {
      this.#draining = true;
      admission.refuseWaiting(new HostError('host_draining', `host ${this.#options.hostId} began draining while this request waited`));
      for (const profileId of admission.profiles()) if (!admission.isHeld(profileId)) snapshots.request(profileId);
    }
    this.sweep();
    return this.progress();
  }

  /** While draining, closes every idle browser with no snapshot written or waiting. Never throws. */
  sweep(): void {
    if (!this.#draining) return;
    const { admission, snapshots } = this.#options;
    for (const profileId of admission.profiles()) if (!snapshots.pendingFor(profileId)) admission.closeIdle(profileId);
  }

  /** Whether draining began and finished: no lease, ceremony, browser, reserved load, waiter or snapshot write left. */
  get drained(): boolean {
    const { admission, leases, ceremonies, snapshots } = this.#options;
    return (
      this.#draining &&
      leases.live === 0 &&
      ceremonies.open === 0 &&
      admission.browsers === 0 &&
      admission.reservedLoads === 0 &&
      admission.waiting === 0 &&
      snapshots.pending === 0
    );
  }

  /** The drain's progress, as `host.drain` answers it. */
  progress(): DrainProgress {
    return { draining: true, drained: this.drained, leases: this.#options.leases.live, snapshots_pending: this.#options.snapshots.pending };
  }

  /**
   * Starts draining and waits until drained or `timeoutMs` ms pass, sweeping every 250 ms (a
   * browser busy a moment ago may be idle now).
   * @returns true when drained in time.
   */
  async untilDrained(timeoutMs: number): Promise<boolean> {
    this.start();
    const deadline = Deadline.after(timeoutMs);
    try {
      while (!this.drained && !deadline.expired) {
        await Deadline.pause(Math.min(SWEEP_MS, deadline.remainingMs()), deadline.signal);
        this.sweep();
      }
      return this.drained;
    } finally {
      deadline.dispose();
    }
  }
}
