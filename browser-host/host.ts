import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { HostStatus } from '../shared/protocol.ts';
import { Admission } from './admission.ts';
import { Ceremonies } from './ceremony/ceremonies.ts';
import type { HostConfig } from './config.ts';
import { ContinuationCursors } from './continuation-cursor.ts';
import { Deadline } from './deadline.ts';
import { startVirtualDisplay, type VirtualDisplay } from './display.ts';
import { type DrainProgress, HostDrain } from './drain/host-drain.ts';
import { LeaseTable } from './lease.ts';
import { LiveViews } from './live-view.ts';
import { methodHandlers } from './methods.ts';
import { ObservationLog } from './observation-log.ts';
import { ProfileBrowser } from './profile-browser.ts';
import { removeRestoreLeftovers } from './profile-snapshot/restore.ts';
import { ProfileSnapshots } from './profile-snapshot/snapshots.ts';
import { startWireServer, type WireServer } from './server.ts';
import { SiteCatalog } from './site-verification/catalog.ts';
import { SessionVerifier } from './site-verification/verify.ts';

/** A running browser host. */
export interface BrowserHost {
  /** `ws://<bind>:<port>`, what the edge connects to. */
  readonly url: string;
  readonly port: number;
  /** The Xvfb display the host started (headed without `DISPLAY`), e.g. `:99`; else undefined. */
  readonly display: VirtualDisplay | undefined;
  /** Counts of browsers, leases, waiters, verification loads and ceremonies, as `host.status` answers. */
  status(): HostStatus;
  /** Starts draining (idempotent; see {@link HostDrain}) and answers its progress, as `host.drain` does. */
  drain(): DrainProgress;
  /** Drains, then resolves true once drained, or false after `timeoutMs` ms (SIGTERM, then {@link close}). */
  untilDrained(timeoutMs: number): Promise<boolean>;
  /**
   * Stops serving, ends every ceremony (no more event deliveries) and every lease, gives snapshot
   * writes under way at most 5 s, closes every browser and stops Xvfb. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * The authority file headed Chromium needs for its display: the host's own Xvfb's, else the
 * operator's `XAUTHORITY`, else `~/.Xauthority` when it exists (Chromium's `HOME` is its profile
 * directory, so it would not find that one itself); undefined when there is none.
 */
function xauthorityFor(display: VirtualDisplay | undefined): string | undefined {
  if (display !== undefined) return display.authority;
  if (process.env.XAUTHORITY) return process.env.XAUTHORITY;
  const inHome = path.join(homedir(), '.Xauthority');
  return existsSync(inHome) ? inHome : undefined;
}

/** Longest Xvfb may take to report its display, in ms. */
const DISPLAY_START_MS = 10_000;

/**
 * Starts a browser host: an Xvfb display when headed and no `DISPLAY` is configured, admission
 * (at most `config.maxBrowsers` browsers), the lease table and the wire server on
 * `config.bind:config.port`, with sign-in detection, session verification and ceremonies over the
 * configured site definitions (ADR-0164). Browsers start lazily, on `lease.acquire` or
 * `ceremony.begin`.
 * @throws HostError('host_unavailable') when Xvfb cannot start; Error when the port cannot be
 *   bound. Whatever had started is stopped again before it throws.
 */
export async function startBrowserHost(config: HostConfig): Promise<BrowserHost> {
  let display: VirtualDisplay | undefined;
  if (!config.headless && config.display === undefined) {
    const deadline = Deadline.after(DISPLAY_START_MS);
    try {
      display = await startVirtualDisplay(deadline);
    } finally {
      deadline.dispose();
    }
  }
  // The host's own port, known once the wire server listens, is never reachable from a page.
  const hostPorts: number[] = [];
  const egress = { allow: config.egress.allow, deny: config.egress.deny, signIn: config.egress.signIn, hostPorts: () => hostPorts };
  const launchOptions = {
    egress,
    chromiumPath: config.chromiumPath,
    headless: config.headless,
    display: display?.name ?? config.display,
    // The host's own display has its own authority file; an operator's display, the operator's.
    xauthority: xauthorityFor(display),
    profilesDir: config.profilesDir,
    personDebugging: config.personDebugging,
  };
  // A restore interrupted by a crash left its staging directory behind: nothing uses it.
  await removeRestoreLeftovers(config.profilesDir);
  const edge = config.edgeUrl === undefined ? undefined : { edgeUrl: config.edgeUrl, sharedSecret: config.sharedSecret, hostId: config.hostId };
  if (edge === undefined) process.stderr.write('browser-host: HOST_EDGE_URL is not set: profiles are neither snapshotted nor restored\n');
  const snapshots: ProfileSnapshots = new ProfileSnapshots({
    profilesDir: config.profilesDir,
    edge,
    intervalMs: config.snapshotIntervalMs,
    browserOf: (profileId) => admission.browserOf(profileId),
    isHeld: (profileId) => admission.isHeld(profileId),
    onStale: (profileId) => {
      snapshots.forget(profileId);
      closeBrowserOf(profileId);
    },
    onSettled: () => drain.sweep(),
  });
  // Revisions continue across relaunches of a profile's browser, and across restarts of the host:
  // a fresh host starts counting at its start time in ms, above anything an earlier host issued
  // (one capture per ms at most), so a plan made on an old page can never match a new one.
  const lastRevisions = new Map<string, number>();
  const revisionBase = Date.now();
  const launch = async (profileId: string): Promise<ProfileBrowser> => {
    // The profile's directory becomes its placement's (kept, restored or empty) before Chromium starts on it.
    const prepared = await snapshots.prepare(profileId);
    const deadline = Deadline.after(config.launchTimeoutMs);
    try {
      const browser = await ProfileBrowser.launch(deadline, profileId, launchOptions, lastRevisions.get(profileId) ?? revisionBase);
      browser.onClosed(() => lastRevisions.set(profileId, browser.revisions.current));
      await snapshots.launched(browser, prepared);
      return browser;
    } finally {
      deadline.dispose();
    }
  };
  const admission: Admission = new Admission({
    maxBrowsers: config.maxBrowsers,
    queueMax: config.admissionQueueMax,
    launch,
    onBrowserLost: (profileId) => leases.interruptProfile(profileId),
    onHoldBegan: (profileId, browser) => snapshots.holdBegan(profileId, browser),
    onHoldEnded: (profileId) => {
      snapshots.holdEnded(profileId);
      drain.sweep();
    },
  });
  const leases: LeaseTable = new LeaseTable({
    onEnded: (lease, why) => {
      const browser = admission.browserOf(lease.profile_id);
      // Nothing is navigable between leases; a run that ended leaves no page running behind it.
      if (browser !== undefined) {
        browser.confinement.leaseOrigins = [];
        // Its downloads were the run's: none is left for the next one.
        void browser.downloads.clear();
        if (why !== 'interrupted') void browser.endActivity();
      }
      admission.release(lease.profile_id);
    },
  });
  const observations = new ObservationLog();
  const catalog = new SiteCatalog(config.siteDefinitions, config.signInWords);
  const verifier = new SessionVerifier({ admission, catalog, launchOptions, profilesDir: config.profilesDir, reserveWaitMs: config.admissionWaitMs });
  const liveViews = new LiveViews();
  const ceremonies = new Ceremonies({
    onFinished: (ceremonyId, outcome) => liveViews.endCeremony(ceremonyId, outcome === 'challenge' ? 'ended' : outcome),
    onNotice: (ceremonyId, sentence) => liveViews.notice(ceremonyId, sentence),
    hostId: config.hostId,
    sharedSecret: config.sharedSecret,
    edgeUrl: config.edgeUrl,
    pollMs: config.ceremonyPollMs,
    admissionWaitMs: config.admissionWaitMs,
    admission,
    leases,
    verifier,
    catalog,
  });
  const drain: HostDrain = new HostDrain({ hostId: config.hostId, admission, leases, ceremonies, snapshots });
  /**
   * Closes the profile's browser here, whatever holds it (its placement is stale, or another
   * generation's): its lease is interrupted (`lease_lost`) and its ceremonies end.
   */
  const closeBrowserOf = (profileId: string): void => {
    admission.evict(profileId);
    leases.interruptProfile(profileId);
    ceremonies.endProfile(profileId);
  };
  const status = (): HostStatus => ({
    host_id: config.hostId,
    browsers: admission.browsers,
    max_browsers: config.maxBrowsers,
    leases: leases.live,
    waiting: admission.waiting,
    headless: config.headless,
    ...observations.view(),
    verification_loads: admission.reservedLoads,
    ceremonies_open: ceremonies.open,
    version: config.version,
    draining: drain.draining,
    snapshots_pending: snapshots.pending,
  });
  const handlers = methodHandlers({
    config,
    admission,
    leases,
    cursors: new ContinuationCursors(config.sharedSecret),
    observations,
    status,
    catalog,
    ceremonies,
    liveViews,
    snapshots,
    drain,
    closeBrowserOf,
  });

  let server: WireServer;
  try {
    server = await startWireServer({
      bind: config.bind,
      port: config.port,
      sharedSecret: config.sharedSecret,
      hostId: config.hostId,
      handlers,
      phaseTimings: config.phaseTimings === true,
    });
    hostPorts.push(server.port);
  } catch (error) {
    await display?.close();
    throw error;
  }

  let closing: Promise<void> | undefined;
  return {
    url: `ws://${config.bind.includes(':') ? `[${config.bind}]` : config.bind}:${server.port}`,
    port: server.port,
    display,
    status,
    drain: () => drain.start(),
    untilDrained: (timeoutMs) => drain.untilDrained(timeoutMs),
    close: () =>
      (closing ??= (async () => {
        liveViews.closeAll();
        await server.close();
        // Ceremonies stop at once; their clean-up may need admission to let go of its waiters.
        const ceremoniesClosed = ceremonies.close();
        leases.clear();
        await snapshots.close();
        await admission.closeAll();
        await ceremoniesClosed;
        await display?.close();
      })()),
  };
}
