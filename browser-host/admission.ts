import { Deadline } from './deadline.ts';
import { firstLineOf, HostError } from './host-error.ts';
import type { ProfileBrowser } from './profile-browser.ts';

/** What admission needs from the rest of the host. */
export interface AdmissionOptions {
  /** Most browsers open (or launching) at once; DESIGN.md section 11: 3. */
  readonly maxBrowsers: number;
  /** Most requests waiting at once; more fail `admission_full` without waiting. */
  readonly queueMax: number;
  /** Starts the browser of a profile. @throws HostError('host_unavailable') */
  readonly launch: (profileId: string) => Promise<ProfileBrowser>;
  /** Called when an open browser went away by itself (crash, closed by a person). */
  readonly onBrowserLost: (profileId: string) => void;
  /** Called when a lease or a ceremony begins to hold the profile's browser. */
  readonly onHoldBegan?: (profileId: string, browser: ProfileBrowser) => void;
  /** Called when that hold ends ({@link Admission.release}); not when the browser went away under it. */
  readonly onHoldEnded?: (profileId: string) => void;
}

interface Slot {
  readonly profileId: string;
  /** Undefined while launching. */
  browser: ProfileBrowser | undefined;
  /** True while a lease (or a launch for one) holds this profile. */
  held: boolean;
  /** Order of its last release (a counter), for least-recently-used eviction. */
  releasedAt: number;
}

/** A request for a profile's browser. */
interface ProfileWaiter {
  readonly kind: 'profile';
  readonly profileId: string;
  readonly resolve: (browser: ProfileBrowser) => void;
  readonly reject: (error: unknown) => void;
  readonly wait: Deadline;
}

/** A request for temporary verification loads. */
interface LoadsWaiter {
  readonly kind: 'loads';
  readonly count: number;
  readonly resolve: (reservation: LoadReservation) => void;
  readonly reject: (error: unknown) => void;
  readonly wait: Deadline;
}

type Waiter = ProfileWaiter | LoadsWaiter;

/**
 * Temporary verification loads reserved against admission (ADR-0164: "remote verification
 * reserves its two temporary loads until cleanup finishes"): they count against `maxBrowsers`
 * until {@link release}.
 */
export interface LoadReservation {
  readonly count: number;
  /** Gives the loads back (idempotent); call it only once the loads' cleanup has finished. */
  release(): void;
}

/**
 * Admission of browsers (DESIGN.md section 6): at most `maxBrowsers` at once, one per profile, and
 * a profile is never held by two leases at once. A request for a profile is granted, in this
 * order of preference: the profile's idle open browser; a new browser in a free slot; a new
 * browser in the slot of the least recently used idle browser (no holder, no operation running),
 * which is closed first. Otherwise it waits in a bounded FIFO queue, first come first served among
 * the requests that can proceed, until a release, an expiry or a lost browser frees something,
 * or its wait runs out (`admission_full`).
 *
 * Temporary verification loads ({@link reserveLoads}) take slots too: browsers plus reserved loads
 * never exceed `maxBrowsers`; they wait in the same queue and may close idle browsers.
 */
export class Admission {
  readonly #options: AdmissionOptions;
  readonly #slots = new Map<string, Slot>();
  /** Browsers being closed, by profile: a profile's directory is reused only after its close. */
  readonly #closing = new Map<string, Promise<void>>();
  /** Launches in progress, so closing the host waits for (and then closes) their browsers. */
  readonly #launches = new Set<Promise<void>>();
  #queue: Waiter[] = [];
  #reservedLoads = 0;
  #releases = 0;
  #closed = false;

  constructor(options: AdmissionOptions) {
    this.#options = options;
  }

  /** Browsers open or launching. */
  get browsers(): number {
    return this.#slots.size;
  }

  /** Temporary verification loads reserved right now. */
  get reservedLoads(): number {
    return this.#reservedLoads;
  }

  /** Requests waiting for admission. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** The open browser of a profile, if any. */
  browserOf(profileId: string): ProfileBrowser | undefined {
    return this.#slots.get(profileId)?.browser;
  }

  /** Whether a lease or a ceremony holds the profile now (or its browser is launching for one). */
  isHeld(profileId: string): boolean {
    return this.#slots.get(profileId)?.held === true;
  }

  /** The profiles whose browsers are open or launching. */
  profiles(): string[] {
    return [...this.#slots.keys()];
  }

  /**
   * Admits `profileId` and resolves with its browser, now held by the caller until
   * {@link release}. Waits up to `waitMs` for a slot (or for the profile to be released).
   * @throws HostError('admission_full') when nothing frees up within `waitMs` or the queue is full;
   *   HostError('host_unavailable') when the browser cannot be launched or the host is closing.
   */
  admit(profileId: string, waitMs: number, options: { first?: boolean } = {}): Promise<ProfileBrowser> {
    if (this.#closed) return Promise.reject(new HostError('host_unavailable', 'the host is shutting down'));
    if (this.#queue.length >= this.#options.queueMax) {
      return Promise.reject(new HostError('admission_full', `${this.#queue.length} requests are already waiting`));
    }
    return new Promise<ProfileBrowser>((resolve, reject) => {
      const waiter: Waiter = { kind: 'profile', profileId, resolve, reject, wait: Deadline.after(waitMs) };
      // A person taking the profile over for sign-in goes before agents waiting for it.
      if (options.first === true) this.#queue.unshift(waiter);
      else this.#queue.push(waiter);
      waiter.wait.signal.addEventListener(
        'abort',
        () => {
          if (!this.#take(waiter)) return;
          reject(new HostError('admission_full', `no browser for profile ${profileId} became available within ${waitMs} ms`));
        },
        { once: true },
      );
      this.#pump();
    });
  }

  /**
   * Reserves `count` temporary loads (at most `maxBrowsers`), waiting in the same FIFO queue as
   * {@link admit} until the deadline; idle browsers may be closed to make room, and the
   * reservation resolves only once they have exited. Held until its `release()`.
   * @throws HostError('admission_full') when no room frees up before the deadline or the queue is
   *   full; HostError('host_unavailable') when the host is closing.
   */
  reserveLoads(count: number, deadline: Deadline): Promise<LoadReservation> {
    if (this.#closed) return Promise.reject(new HostError('host_unavailable', 'the host is shutting down'));
    if (count < 1 || count > this.#options.maxBrowsers) {
      return Promise.reject(new HostError('admission_full', `${count} loads can never fit in ${this.#options.maxBrowsers} browsers`));
    }
    if (this.#queue.length >= this.#options.queueMax) {
      return Promise.reject(new HostError('admission_full', `${this.#queue.length} requests are already waiting`));
    }
    if (deadline.signal.aborted) return Promise.reject(new HostError('admission_full', 'no time was left to wait for verification loads'));
    return new Promise<LoadReservation>((resolve, reject) => {
      const waiter: Waiter = { kind: 'loads', count, resolve, reject, wait: deadline.child(deadline.remainingMs()) };
      this.#queue.push(waiter);
      waiter.wait.signal.addEventListener(
        'abort',
        () => {
          if (!this.#take(waiter)) return;
          reject(new HostError('admission_full', `no room for ${count} verification loads became available in time`));
        },
        { once: true },
      );
      this.#pump();
    });
  }

  /** Ends the hold on `profileId`; its browser stays open, idle and reusable. Wakes the queue. */
  release(profileId: string): void {
    const slot = this.#slots.get(profileId);
    if (!slot?.held) return;
    slot.held = false;
    slot.releasedAt = ++this.#releases;
    this.#options.onHoldEnded?.(profileId);
    this.#pump();
  }

  /**
   * Closes the profile's browser whether or not it is held (its placement went stale): the slot is
   * freed at once, and a later admission of the profile launches anew once this browser has
   * exited. A browser still launching is left alone. The caller interrupts the holder.
   * @returns true when there was an open browser.
   */
  evict(profileId: string): boolean {
    const slot = this.#slots.get(profileId);
    if (slot?.browser === undefined) return false;
    this.#slots.delete(profileId);
    this.#closeTracked(profileId, slot.browser);
    this.#pump();
    return true;
  }

  /**
   * Closes the profile's browser when it is idle: open, not held, no operation running (drain).
   * @returns true when it was closed.
   */
  closeIdle(profileId: string): boolean {
    const slot = this.#slots.get(profileId);
    if (slot === undefined || slot.held || slot.browser === undefined || slot.browser.busy) return false;
    return this.evict(profileId);
  }

  /** Fails every request waiting for a profile's browser with `error` (drain); verification loads keep waiting. */
  refuseWaiting(error: HostError): void {
    for (const waiter of [...this.#queue]) {
      if (waiter.kind !== 'profile') continue;
      this.#take(waiter);
      waiter.reject(error);
    }
  }

  /** Rejects every waiter and closes every browser; admits nothing afterwards. */
  async closeAll(): Promise<void> {
    this.#closed = true;
    for (const waiter of [...this.#queue]) {
      this.#take(waiter);
      waiter.reject(new HostError('host_unavailable', 'the host is shutting down'));
    }
    const slots = [...this.#slots.values()];
    this.#slots.clear();
    await Promise.all([...slots.map((slot) => slot.browser?.close()), ...this.#closing.values(), ...this.#launches]);
  }

  /** Removes a waiter from the queue; false if it was already gone. */
  #take(waiter: Waiter): boolean {
    const index = this.#queue.indexOf(waiter);
    if (index < 0) return false;
    this.#queue.splice(index, 1);
    waiter.wait.dispose();
    return true;
  }

  /** Slots not taken by a browser (open or launching) or a reserved load. */
  #free(): number {
    return this.#options.maxBrowsers - this.#slots.size - this.#reservedLoads;
  }

  #pump(): void {
    if (this.#closed) return;
    for (const waiter of [...this.#queue]) {
      if (waiter.kind === 'loads') {
        this.#tryReserve(waiter);
        continue;
      }
      const slot = this.#slots.get(waiter.profileId);
      if (slot) {
        if (slot.held || slot.browser === undefined) continue;
        this.#take(waiter);
        slot.held = true;
        this.#options.onHoldBegan?.(slot.profileId, slot.browser);
        waiter.resolve(slot.browser);
      } else if (this.#free() > 0) {
        this.#take(waiter);
        this.#launchFor(waiter, undefined);
      } else {
        const victim = this.#idleVictims(1)[0];
        if (!victim) continue;
        this.#take(waiter);
        this.#launchFor(waiter, victim);
      }
    }
  }

  /** Grants `waiter` its loads if they fit, closing least recently used idle browsers for room. */
  #tryReserve(waiter: LoadsWaiter): void {
    const missing = waiter.count - Math.max(0, this.#free());
    const victims = missing > 0 ? this.#idleVictims(missing) : [];
    if (victims.length < missing) return;
    this.#take(waiter);
    for (const victim of victims) {
      this.#slots.delete(victim.profileId);
      this.#closeTracked(victim.profileId, victim.browser);
    }
    this.#reservedLoads += waiter.count;
    let released = false;
    const reservation: LoadReservation = {
      count: waiter.count,
      release: () => {
        if (released) return;
        released = true;
        this.#reservedLoads -= waiter.count;
        this.#pump();
      },
    };
    // The loads start only once the browsers they displaced have exited.
    const exits = victims.map((victim) => this.#closing.get(victim.profileId));
    void Promise.all(exits).then(() => waiter.resolve(reservation));
  }

  /** Up to `count` idle browsers (no holder, no operation running), least recently used first. */
  #idleVictims(count: number): Slot[] {
    return [...this.#slots.values()]
      .filter((slot) => !slot.held && slot.browser !== undefined && !slot.browser.busy)
      .sort((a, b) => a.releasedAt - b.releasedAt)
      .slice(0, count);
  }

  #launchFor(waiter: ProfileWaiter, victim: Slot | undefined): void {
    const slot: Slot = { profileId: waiter.profileId, browser: undefined, held: true, releasedAt: 0 };
    this.#slots.set(slot.profileId, slot);
    if (victim) {
      this.#slots.delete(victim.profileId);
      this.#closeTracked(victim.profileId, victim.browser);
    }
    const launch = (async () => {
      // Chromium locks its user-data directory: wait until an earlier browser of this profile
      // (and the evicted one, whose slot this takes) has exited.
      await this.#closing.get(slot.profileId);
      if (victim) await this.#closing.get(victim.profileId);
      const browser = await this.#options.launch(slot.profileId);
      if (this.#slots.get(slot.profileId) !== slot) {
        await browser.close();
        throw new HostError('host_unavailable', 'the host is shutting down');
      }
      slot.browser = browser;
      browser.onClosed(() => this.#lost(slot, browser));
      this.#options.onHoldBegan?.(slot.profileId, browser);
      waiter.resolve(browser);
    })().catch((error: unknown) => {
      if (this.#slots.get(slot.profileId) === slot) this.#slots.delete(slot.profileId);
      waiter.reject(error instanceof HostError ? error : new HostError('host_unavailable', firstLineOf(error)));
      this.#pump();
    });
    this.#launches.add(launch);
    void launch.finally(() => this.#launches.delete(launch));
  }

  #closeTracked(profileId: string, browser: ProfileBrowser | undefined): void {
    if (!browser) return;
    const closing = browser.close().finally(() => {
      if (this.#closing.get(profileId) === closing) this.#closing.delete(profileId);
    });
    this.#closing.set(profileId, closing);
  }

  /** The browser went away without admission closing it. */
  #lost(slot: Slot, browser: ProfileBrowser): void {
    if (this.#slots.get(slot.profileId) !== slot || slot.browser !== browser) return;
    this.#slots.delete(slot.profileId);
    this.#options.onBrowserLost(slot.profileId);
    this.#pump();
  }
}
