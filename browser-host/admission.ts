import { Deadline } from './deadline.ts';
import { HostError, firstLineOf } from './host-error.ts';
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

interface Waiter {
  readonly profileId: string;
  readonly resolve: (browser: ProfileBrowser) => void;
  readonly reject: (error: unknown) => void;
  readonly wait: Deadline;
}

/**
 * Admission of browsers (DESIGN.md section 6): at most `maxBrowsers` at once, one per profile, and
 * a profile is never held by two leases at once. A request for a profile is granted, in this
 * order of preference: the profile's idle open browser; a new browser in a free slot; a new
 * browser in the slot of the least recently used idle browser (no holder, no operation running),
 * which is closed first. Otherwise it waits in a bounded FIFO queue, first come first served among
 * the requests that can proceed, until a release, an expiry or a lost browser frees something,
 * or its wait runs out (`admission_full`).
 */
export class Admission {
  readonly #options: AdmissionOptions;
  readonly #slots = new Map<string, Slot>();
  /** Browsers being closed, by profile: a profile's directory is reused only after its close. */
  readonly #closing = new Map<string, Promise<void>>();
  /** Launches in progress, so closing the host waits for (and then closes) their browsers. */
  readonly #launches = new Set<Promise<void>>();
  #queue: Waiter[] = [];
  #releases = 0;
  #closed = false;

  constructor(options: AdmissionOptions) {
    this.#options = options;
  }

  /** Browsers open or launching. */
  get browsers(): number {
    return this.#slots.size;
  }

  /** Requests waiting for admission. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** The open browser of a profile, if any. */
  browserOf(profileId: string): ProfileBrowser | undefined {
    return this.#slots.get(profileId)?.browser;
  }

  /**
   * Admits `profileId` and resolves with its browser, now held by the caller until
   * {@link release}. Waits up to `waitMs` for a slot (or for the profile to be released).
   * @throws HostError('admission_full') when nothing frees up within `waitMs` or the queue is full;
   *   HostError('host_unavailable') when the browser cannot be launched or the host is closing.
   */
  admit(profileId: string, waitMs: number): Promise<ProfileBrowser> {
    if (this.#closed) return Promise.reject(new HostError('host_unavailable', 'the host is shutting down'));
    if (this.#queue.length >= this.#options.queueMax) {
      return Promise.reject(new HostError('admission_full', `${this.#queue.length} requests are already waiting`));
    }
    return new Promise<ProfileBrowser>((resolve, reject) => {
      const waiter: Waiter = { profileId, resolve, reject, wait: Deadline.after(waitMs) };
      this.#queue.push(waiter);
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

  /** Ends the hold on `profileId`; its browser stays open, idle and reusable. Wakes the queue. */
  release(profileId: string): void {
    const slot = this.#slots.get(profileId);
    if (!slot || !slot.held) return;
    slot.held = false;
    slot.releasedAt = ++this.#releases;
    this.#pump();
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

  #pump(): void {
    if (this.#closed) return;
    for (const waiter of [...this.#queue]) {
      const slot = this.#slots.get(waiter.profileId);
      if (slot) {
        if (slot.held || slot.browser === undefined) continue;
        this.#take(waiter);
        slot.held = true;
        waiter.resolve(slot.browser);
      } else if (this.#slots.size < this.#options.maxBrowsers) {
        this.#take(waiter);
        this.#launchFor(waiter, undefined);
      } else {
        const victim = this.#idleVictim();
        if (!victim) continue;
        this.#take(waiter);
        this.#launchFor(waiter, victim);
      }
    }
  }

  #idleVictim(): Slot | undefined {
    let victim: Slot | undefined;
    for (const slot of this.#slots.values()) {
      if (slot.held || slot.browser === undefined || slot.browser.busy) continue;
      if (!victim || slot.releasedAt < victim.releasedAt) victim = slot;
    }
    return victim;
  }

  #launchFor(waiter: Waiter, victim: Slot | undefined): void {
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
