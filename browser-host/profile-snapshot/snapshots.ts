import type { PlacementGrant, RestoreReport } from '../../shared/fleet.ts';
import { Deadline } from '../deadline.ts';
import { firstLineOf, HostError } from '../host-error.ts';
import type { ProfileBrowser } from '../profile-browser.ts';
import { captureProfileArchive } from './capture.ts';
import { type PreparedProfile, prepareProfileDirectory } from './restore.ts';
import { sealSnapshot } from './seal.ts';
import { restoreStorageState } from './storage-state.ts';
import { type EdgeSnapshots, uploadSnapshot } from './transfer.ts';

/** Longest capturing a profile's archive may take, waiting for the page's turn included, in ms. */
const CAPTURE_MS = 20_000;
/** Longest restoring a profile may take before its Chromium starts (downloads included), in ms. */
const RESTORE_MS = 30_000;
/** Longest putting a restored storage state back into a launched browser may take, in ms. */
const STORAGE_RESTORE_MS = 10_000;
/** Longest host shutdown waits for snapshot writes under way, in ms. */
const CLOSE_MS = 5_000;

/** What the snapshot service needs from the rest of the host. */
export interface ProfileSnapshotsOptions {
  readonly profilesDir: string;
  /** The edge's snapshot endpoints; undefined (no `HOST_EDGE_URL`): nothing is written or restored. */
  readonly edge: EdgeSnapshots | undefined;
  /** Spacing of the snapshots written while a hold lasts (`HOST_SNAPSHOT_INTERVAL_MS`), in ms. */
  readonly intervalMs: number;
  /** The open browser of a profile (admission's), if any. */
  readonly browserOf: (profileId: string) => ProfileBrowser | undefined;
  /** Whether a lease or a ceremony holds the profile now. */
  readonly isHeld: (profileId: string) => boolean;
  /** The edge refused a snapshot of the profile for a stale generation: its placement moved on. */
  readonly onStale: (profileId: string, message: string) => void;
  /** Called when a profile has no snapshot written or waiting any more. */
  readonly onSettled?: (profileId: string) => void;
  /** Where the service says what went wrong (default: the host's stderr). */
  readonly log?: (line: string) => void;
}

/** The writes of one profile: the one under way, and whether another was asked for meanwhile. */
interface Writes {
  running: Promise<void> | undefined;
  queued: boolean;
}

/**
 * The profiles' snapshots on this host (issue 32, shared/fleet.ts): the placement each profile
 * was granted here, the restore before its Chromium starts, and the snapshot writes.
 *
 * - {@link place} records a `lease.acquire`'s or `ceremony.begin`'s placement grant;
 * - {@link prepare} (before Chromium starts) keeps, restores or empties the profile's directory,
 *   and {@link launched} (after) adds the restored cookies and notes the generation the browser
 *   serves;
 * - {@link holdBegan} and {@link holdEnded} (admission's holds: a lease or a ceremony) write a
 *   snapshot when a hold ends and every `intervalMs` while it lasts; {@link request} asks for one
 *   at any time (drain). Writes of one profile run one at a time; asked for while one runs, the
 *   next one is queued once (a newer request supersedes a queued one: it would capture the same
 *   later state). Nothing waits for them: a write captures in the page's turn, seals and uploads
 *   in the background, and a stale generation at the edge is handed to `onStale`.
 */
export class ProfileSnapshots {
  readonly #options: ProfileSnapshotsOptions;
  readonly #placements = new Map<string, PlacementGrant>();
  /** The placement generation each browser was launched for. */
  readonly #served = new WeakMap<ProfileBrowser, number>();
  /** What the launch of each browser restored, until its first hold begins. */
  readonly #launchReports = new WeakMap<ProfileBrowser, RestoreReport>();
  /** What the launch restored, for the hold that began with the launch (and only that one). */
  readonly #holdReports = new WeakMap<ProfileBrowser, RestoreReport>();
  /** Restored storage states not yet put back into a running browser, by profile. */
  readonly #storage = new Map<string, NonNullable<PreparedProfile['storage']>>();
  readonly #writes = new Map<string, Writes>();
  /** Each held profile's next periodic write. */
  readonly #timers = new Map<string, Deadline>();
  readonly #stop = new AbortController();
  #closed = false;

  constructor(options: ProfileSnapshotsOptions) {
    this.#options = options;
  }

  /** Snapshot writes under way or queued, all profiles together (`host.status` `snapshots_pending`). */
  get pending(): number {
    let pending = 0;
    for (const writes of this.#writes.values()) pending += (writes.running === undefined ? 0 : 1) + (writes.queued ? 1 : 0);
    return pending;
  }

  /** Whether a write of `profileId` is under way or queued. */
  pendingFor(profileId: string): boolean {
    return this.#writes.has(profileId);
  }

  /**
   * Records `grant` as the profile's placement on this host (`lease.acquire`, `ceremony.begin`).
   * @returns true when the profile's open browser serves another generation (or none: it was
   *   launched before any placement) and must be closed before it is handed out.
   * @throws HostError('stale_generation') when `grant` is older than the placement recorded.
   */
  place(profileId: string, grant: PlacementGrant): boolean {
    const current = this.#placements.get(profileId);
    if (current !== undefined && grant.generation < current.generation) {
      throw new HostError('stale_generation', `profile ${profileId} is placed here at generation ${current.generation}, not ${grant.generation}`);
    }
    this.#placements.set(profileId, grant);
    const browser = this.#options.browserOf(profileId);
    return browser !== undefined && !browser.closed && this.#served.get(browser) !== grant.generation;
  }

  /** The placement generation `browser` was launched for; undefined when launched without a placement. */
  servedGeneration(browser: ProfileBrowser): number | undefined {
    return this.#served.get(browser);
  }

  /**
   * Before Chromium starts on the profile: makes its directory the placement's (see
   * `prepareProfileDirectory`: kept, restored, or started empty), within 30 s. Nothing without a
   * placement (an edge without fleets).
   * @returns what was prepared, to pass to {@link launched}; undefined without a placement.
   * @throws Error when the host's disk fails.
   */
  async prepare(profileId: string): Promise<PreparedProfile | undefined> {
    const grant = this.#placements.get(profileId);
    if (grant === undefined) return undefined;
    const deadline = Deadline.after(RESTORE_MS);
    try {
      const prepared = await prepareProfileDirectory(deadline, { profilesDir: this.#options.profilesDir, profileId, grant, edge: this.#options.edge });
      for (const refused of prepared.report.refused) this.#log(`profile ${profileId}: snapshot version ${refused.version} refused: ${refused.reason}`);
      if (prepared.storage !== undefined) this.#storage.set(profileId, prepared.storage);
      return prepared;
    } finally {
      deadline.dispose();
    }
  }

  /**
   * After Chromium started on a prepared profile: puts the restored storage state back (see
   * `restoreStorageState`; kept for the next launch when this fails, within 10 s) and notes the
   * generation and the restore report of `browser`. Never throws.
   */
  async launched(browser: ProfileBrowser, prepared: PreparedProfile | undefined): Promise<void> {
    if (prepared === undefined) return;
    this.#served.set(browser, prepared.generation);
    this.#launchReports.set(browser, prepared.report);
    const storage = this.#storage.get(browser.profileId);
    if (storage === undefined) return;
    const deadline = Deadline.after(STORAGE_RESTORE_MS);
    try {
      await restoreStorageState(deadline, browser, storage);
      this.#storage.delete(browser.profileId);
    } catch (error) {
      this.#log(`profile ${browser.profileId}: the restored cookies and local storage could not be put back: ${firstLineOf(error)}`);
    } finally {
      deadline.dispose();
    }
  }

  /** What the launch of `browser` restored, while the hold that began with the launch lasts; else undefined. */
  restoreReportOf(browser: ProfileBrowser): RestoreReport | undefined {
    return this.#holdReports.get(browser);
  }

  /** A lease or a ceremony began to hold the profile's `browser`: snapshots every `intervalMs` while it lasts. */
  holdBegan(profileId: string, browser: ProfileBrowser): void {
    const report = this.#launchReports.get(browser);
    this.#launchReports.delete(browser);
    if (report === undefined) this.#holdReports.delete(browser);
    else this.#holdReports.set(browser, report);
    // Nothing to write without an edge or a placement (and so a key).
    if (this.#options.edge === undefined || !this.#placements.has(profileId) || this.#timers.has(profileId)) return;
    this.#schedule(profileId);
  }

  /** The hold on the profile ended (released, expired, interrupted, a ceremony's end): a snapshot is written. */
  holdEnded(profileId: string): void {
    this.#stopTimer(profileId);
    this.request(profileId);
  }

  /**
   * Asks for a snapshot of the profile: written in the background when the profile has a
   * placement, an open browser launched for that placement, and the host an edge; else nothing.
   */
  request(profileId: string): void {
    if (this.#options.edge === undefined || this.#closed || !this.#placements.has(profileId)) return;
    const writes = this.#writes.get(profileId);
    if (writes === undefined) this.#start(profileId, { running: undefined, queued: false });
    else if (writes.running !== undefined) writes.queued = true;
  }

  /**
   * Forgets the profile's placement (the edge refused its generation): nothing more is written
   * for it, and its next placement here restores anew (the marker names the old generation).
   */
  forget(profileId: string): void {
    this.#placements.delete(profileId);
    this.#storage.delete(profileId);
    this.#stopTimer(profileId);
    const writes = this.#writes.get(profileId);
    if (writes !== undefined) writes.queued = false;
  }

  /** Host shutdown: no more writes; uploads under way are stopped after at most 5 s. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const profileId of [...this.#timers.keys()]) this.#stopTimer(profileId);
    const running = [...this.#writes.values()].map((writes) => writes.running);
    for (const writes of this.#writes.values()) writes.queued = false;
    await Deadline.waitAtMost(CLOSE_MS, Promise.all(running));
    this.#stop.abort();
  }

  #start(profileId: string, writes: Writes): void {
    this.#writes.set(profileId, writes);
    writes.running = this.#write(profileId).finally(() => {
      writes.running = undefined;
      if (writes.queued && this.#placements.has(profileId) && !this.#closed) {
        writes.queued = false;
        this.#start(profileId, writes);
        return;
      }
      this.#writes.delete(profileId);
      this.#options.onSettled?.(profileId);
    });
  }

  /** One snapshot of the profile: captured in its page's turn, sealed, uploaded. Never throws. */
  async #write(profileId: string): Promise<void> {
    const grant = this.#placements.get(profileId);
    const browser = this.#options.browserOf(profileId);
    const edge = this.#options.edge;
    // A browser launched for another placement (or none) holds a directory that is not this one's.
    if (grant === undefined || edge === undefined || browser === undefined || browser.closed || this.#served.get(browser) !== grant.generation) return;
    let sealed: Uint8Array<ArrayBuffer>;
    const deadline = Deadline.after(CAPTURE_MS);
    try {
      sealed = sealSnapshot(await captureProfileArchive(deadline, browser, this.#options.profilesDir), grant.snapshot_key, profileId);
    } catch (error) {
      if (!browser.closed) this.#log(`profile ${profileId}: no snapshot this time: ${firstLineOf(error)}`);
      return;
    } finally {
      deadline.dispose();
    }
    const outcome = await uploadSnapshot(edge, profileId, grant.generation, sealed, this.#stop.signal);
    if (outcome.kind === 'failed') this.#log(`profile ${profileId}: snapshot not stored (the next one is written when a hold ends): ${outcome.reason}`);
    // Only the placement this snapshot was written for is stale; a newer one recorded meanwhile is not.
    if (outcome.kind === 'stale' && this.#placements.get(profileId)?.generation === grant.generation) {
      this.#log(`profile ${profileId}: the edge refused generation ${grant.generation} (${outcome.message}); its browser here is closed`);
      this.#options.onStale(profileId, outcome.message);
    }
  }

  /** Writes a snapshot every `intervalMs` while the profile stays held. */
  #schedule(profileId: string): void {
    const timer = Deadline.after(this.#options.intervalMs);
    this.#timers.set(profileId, timer);
    timer.signal.addEventListener(
      'abort',
      () => {
        if (this.#timers.get(profileId) !== timer || this.#closed) return;
        this.#timers.delete(profileId);
        if (!this.#options.isHeld(profileId)) return;
        this.request(profileId);
        this.#schedule(profileId);
      },
      { once: true },
    );
  }

  /** Stops the profile's periodic writes (taken out of the map first: disposing fires the timer's signal). */
  #stopTimer(profileId: string): void {
    const timer = this.#timers.get(profileId);
    this.#timers.delete(profileId);
    timer?.dispose();
  }

  #log(line: string): void {
    (this.#options.log ?? ((text: string) => process.stderr.write(`${text}\n`)))(`browser-host: ${line}`);
  }
}
