import type { ErrorCode } from '../shared/errors.ts';
import type { PlacementGrant } from '../shared/fleet.ts';
import type { HostMethod, HostParams, HostResult, HostStatus } from '../shared/protocol.ts';
import { actOnPage } from './actions.ts';
import type { Admission } from './admission.ts';
import { captureRevision } from './capture.ts';
import type { Ceremonies } from './ceremony/ceremonies.ts';
import type { HostConfig } from './config.ts';
import type { ContinuationCursors } from './continuation-cursor.ts';
import { Deadline } from './deadline.ts';
import type { HostDrain } from './drain/host-drain.ts';
import { landingUrl, moveInHistory } from './history.ts';
import { hitTest } from './hit-test.ts';
import { HostError } from './host-error.ts';
import type { LeaseTable } from './lease.ts';
import type { LiveViews } from './live-view.ts';
import { navigatePage } from './navigation.ts';
import { capturePictured, continueObservation, hostObservationOf, NOT_WAITED, type ObservationContext } from './observation.ts';
import type { ObservationLog } from './observation-log.ts';
import { notePhase } from './phase-clock.ts';
import type { ProfileBrowser } from './profile-browser.ts';
import type { ProfileSnapshots } from './profile-snapshot/snapshots.ts';
import { boxOf, takeScreenshot } from './screenshots.ts';
import type { SiteCatalog } from './site-verification/catalog.ts';
import type { CapturedRevision } from './snapshot/captured-revision.ts';
import type { WireConnection } from './wire-connection.ts';

/** Failures that guarantee nothing was dispatched; when the lease ended meanwhile, they read as `lease_lost`. */
const NOTHING_SENT_WHEN: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'action_failed',
  'not_actionable',
  'target_changed',
  'page_changed',
  'stale_revision',
  'navigation_failed',
]);

/** The services the method handlers call; built once per host. */
export interface HostServices {
  readonly config: HostConfig;
  readonly admission: Admission;
  readonly leases: LeaseTable;
  readonly cursors: ContinuationCursors;
  /** Counts fresh observe captures for `host.status`. */
  readonly observations: ObservationLog;
  /** What `host.status` answers. */
  readonly status: () => HostStatus;
  /** The enabled site verification definitions (sign-in signals). */
  readonly catalog: SiteCatalog;
  /** Sign-in ceremonies (ADR-0164). */
  readonly ceremonies: Ceremonies;
  /** Live views of ceremonies' pages (issue 16). */
  readonly liveViews: LiveViews;
  /** Placements and snapshots of the profiles (issue 32). */
  readonly snapshots: ProfileSnapshots;
  readonly drain: HostDrain;
  /** Closes a profile's browser whatever holds it (a stale placement): its lease interrupted, its ceremonies ended. */
  readonly closeBrowserOf: (profileId: string) => void;
}

/**
 * One handler per wire method, taking params already parsed by the method's schema and the
 * connection it was called on (only live views keep using it after they answer).
 */
export type MethodHandlers = { readonly [M in HostMethod]: (params: HostParams<M>, connection: WireConnection) => Promise<HostResult<M>> };

/**
 * The wire methods (shared/protocol.ts `HOST_METHODS`), each a thin handler over one service:
 *
 * - `lease.acquire`: `host_draining` once the host drains. With a `placement` (shared/fleet.ts),
 *   records it first (`stale_generation` when older than the one recorded), closing the profile's
 *   browser when it serves another generation; the browser it launches starts on the placement's
 *   directory (kept, restored from a snapshot, or empty: `ProfileSnapshots.prepare`), and the
 *   grant then carries what was restored (`restore`). Ends any lease the same run still holds on
 *   the profile (an orphan of a lost answer), then admits the profile (see
 *   {@link Admission.admit}: `admission_full`, `host_unavailable`) and grants a lease with the
 *   profile's next lease generation. The browser's
 *   earlier references are invalidated: a new lease observes before it acts (`page_changed`).
 *   The run's `origins` become the browser's navigable origins until the lease ends, when the
 *   page leaves for about:blank (README "Confinement").
 * - `lease.renew`: `lease_lost` unless live. `lease.release`: `{released}`; the browser stays
 *   open and idle.
 * - `page.navigate`, `page.act`, plain `page.observe`: `lease_lost` unless live (checked before
 *   and again when the operation's turn comes), then serialized per page and bounded by
 *   `timeout_ms` (see `ProfileBrowser.run`: a page that went away under the operation fails it
 *   `page_changed` or `outcome_unknown`, and one that stopped answering is replaced after it);
 *   see {@link navigatePage}, {@link actOnPage} (with the act's `target`, `elements` and, for an
 *   upload, `file`: `invalid_params` when they do not fit the action) and, for a plain observe,
 *   {@link captureRevision} (`not_waited`). Each answers a full capture's first window with the
 *   wire-only `sign_in` signal when the page asks for sign-in ({@link hostObservationOf}), and
 *   the downloads finished since the lease's last such answer (`downloaded_files`).
 * - `page.observe {screenshot: true}`: as a plain observe, plus `viewport_jpeg`, a JPEG of the
 *   viewport of the same revision (see {@link capturePictured}); `not_found` when screenshots
 *   are off (`HOST_SCREENSHOTS=0`).
 * - `page.navigate {history, expected_url}` (1.5.0): a history move onto the entry the edge decided
 *   on, see {@link moveInHistory} (`target_changed`, `outside_run_origins` with nothing moved).
 * - `page.hit_test` (1.5.0): the reference at a point of the latest revision, in the page's turn;
 *   reads only (see {@link hitTest}). `page.history` (1.5.0): the landing entry's URL of a
 *   history move, without moving (see {@link landingUrl}).
 * - `page.observe {continuation}`: `lease_lost` unless live; served from the cached revision
 *   without waiting for the page (see {@link continueObservation}); never a sign-in signal, a
 *   download or a screenshot (`invalid_params` when one is asked for with a continuation).
 * - `page.download`: `lease_lost` unless live; a saved download's bytes, forgotten and deleted
 *   as they are read (see `PageDownloads.take`: `invalid_params` for an id it does not hold).
 *   A new lease on the browser, and the end of a lease, delete every download of the last one.
 * - `page.screenshot`: `lease_lost` unless live; the picture shelved right after the act or
 *   navigation that produced `revision` (`page.act` and `page.navigate` shelve one as they
 *   answer; nothing waits for it, and one a later act or navigation overtook is dropped), else, or when a `reference` asks for its box, a
 *   fresh one in the page's turn while `revision` is still the latest (`stale_revision`
 *   otherwise); `not_found` when screenshots are off (`HOST_SCREENSHOTS=0`).
 * - `host.status`: counts of browsers, leases, waiters, fresh observe captures, reserved
 *   verification loads and open ceremonies; the version, whether the host drains, and the
 *   snapshot writes pending.
 * - `host.drain`: starts draining (see {@link HostDrain}) and answers its progress.
 * - `ceremony.begin`: `host_draining` once the host drains; its `placement` is recorded as with
 *   `lease.acquire`. `ceremony.begin`, `ceremony.status`, `ceremony.end`: see {@link Ceremonies}.
 * - `liveview.open`: a live view of an open ceremony's page, waiting for a person (`not_found`
 *   otherwise), streamed on the calling connection; `liveview.input`, `liveview.close`: see
 *   {@link LiveViews} (`not_found` for a view that has ended).
 */
export function methodHandlers(services: HostServices): MethodHandlers {
  const { config, admission, leases, cursors, catalog, ceremonies, liveViews, snapshots, drain } = services;

  /** Refuses while draining, and records a placement (closing a browser of another generation). */
  const admitPlacement = (profileId: string, placement: PlacementGrant | undefined): void => {
    drain.refuseWhileDraining();
    if (placement !== undefined && snapshots.place(profileId, placement)) services.closeBrowserOf(profileId);
  };

  /** The live lease's browser. @throws HostError('lease_lost') */
  const leasedBrowser = (leaseId: string): ProfileBrowser => {
    const browser = admission.browserOf(leases.check(leaseId).profile_id);
    if (!browser) throw new HostError('lease_lost', 'the leased browser is gone; nothing was dispatched');
    return browser;
  };

  /** Runs `operation` on the lease's page in its turn, within `timeoutMs`. */
  const onLeasedPage = async <T>(
    leaseId: string,
    timeoutMs: number,
    operation: (deadline: Deadline, browser: ProfileBrowser, context: ObservationContext) => Promise<T>,
  ): Promise<T> => {
    const deadline = Deadline.after(timeoutMs);
    try {
      const browser = leasedBrowser(leaseId);
      return await browser.run(deadline, () => {
        leasedBrowser(leaseId);
        return operation(deadline, browser, { caps: config.window, cursors, leaseId });
      });
    } catch (error) {
      // The lease ended during an operation that sent nothing (its page was left): that is the answer.
      if (error instanceof HostError && NOTHING_SENT_WHEN.has(error.code) && !leases.isLive(leaseId)) {
        throw new HostError('lease_lost', `the lease ended during the operation; nothing was dispatched (${error.message})`);
      }
      throw error;
    } finally {
      deadline.dispose();
    }
  };

  /** Shelves a screenshot of what an act or navigation left the page showing (see `ScreenshotShelf`). */
  const shelveScreenshot = (leaseId: string, browser: ProfileBrowser, captured: { revision: number }): void => {
    if (!config.screenshots.enabled) return;
    const started = performance.now();
    browser.screenshots.shelve(
      leaseId,
      captured.revision,
      () => (browser.revisions.invalidation === undefined ? browser.revisions.current : -1),
      () => browser.openPage,
      config.screenshots,
    );
    notePhase('screenshot', performance.now() - started);
  };

  return {
    'lease.acquire': async ({ run_id, profile_id, origins, ttl_ms, wait_ms, placement }) => {
      admitPlacement(profile_id, placement);
      leases.releaseHeldBy(profile_id, run_id);
      // HOST_ADMISSION_WAIT_MS is both the default and the longest wait (README "Configuration").
      const browser = await admission.admit(profile_id, Math.min(wait_ms ?? config.admissionWaitMs, config.admissionWaitMs)).catch((error: unknown) => {
        // The host is not full: the profile is another run's until its lease ends.
        const holder = error instanceof HostError && error.code === 'admission_full' ? leases.heldByAnother(profile_id, run_id) : undefined;
        if (holder === undefined) throw error;
        throw new HostError(
          'profile_in_use',
          `profile ${profile_id} is leased by run ${holder.run_id} until ${new Date(holder.expires_at_ms).toISOString()} (or until that run ends)`,
        );
      });
      // Placed here again at another generation while the browser started: never hand it out.
      if (placement !== undefined && snapshots.servedGeneration(browser) !== placement.generation) {
        services.closeBrowserOf(profile_id);
        throw new HostError('host_unavailable', `profile ${profile_id} was placed here again while its browser started; ask again`);
      }
      if (browser.revisions.latest !== undefined) browser.revisions.invalidate('a new lease began');
      const grant = leases.grant(profile_id, ttl_ms, run_id);
      const restore = snapshots.restoreReportOf(browser);
      // The new run's page starts with its own record and its own origins (README "Confinement").
      browser.events.drain();
      await browser.downloads.clear();
      browser.confinement.leaseOrigins = origins;
      await browser.settled();
      return restore === undefined ? grant : { ...grant, restore };
    },
    'page.hit_test': ({ lease_id, revision, point, timeout_ms }) =>
      onLeasedPage(lease_id, timeout_ms, async (deadline, browser) => ({ reference: await hitTest(deadline, browser, revision, point) })),
    'page.history': ({ lease_id, history, timeout_ms }) =>
      onLeasedPage(lease_id, timeout_ms, async (deadline, browser) => ({ url: await landingUrl(deadline, browser, history) })),
    'page.download': ({ lease_id, download_id }) => leasedBrowser(lease_id).downloads.take(download_id),
    'lease.renew': async ({ lease_id, ttl_ms }) => leases.renew(lease_id, ttl_ms),
    'lease.release': async ({ lease_id }) => ({ released: leases.release(lease_id) }),
    'page.navigate': (params) =>
      onLeasedPage(params.lease_id, params.timeout_ms, async (deadline, browser, context) => {
        const { lease_id } = params;
        browser.screenshots.writeBegins();
        browser.traffic.restartTrail();
        const captured =
          'url' in params
            ? await navigatePage(deadline, browser, params.url, config.settle)
            : await moveInHistory(deadline, browser, params.history, params.expected_url, config.settle);
        shelveScreenshot(lease_id, browser, captured);
        return hostObservationOf(deadline, browser, captured, context, catalog);
      }),
    'page.observe': async ({ lease_id, continuation, screenshot, timeout_ms }) => {
      if (continuation !== undefined) {
        if (screenshot === true) throw new HostError('invalid_params', 'a screenshot comes with a fresh observation only, not with a continuation');
        return continueObservation(leasedBrowser(lease_id), continuation, { caps: config.window, cursors, leaseId: lease_id });
      }
      if (screenshot === true && !config.screenshots.enabled) throw new HostError('not_found', 'this host takes no screenshots (HOST_SCREENSHOTS=0)');
      const receivedAt = Date.now();
      const observation = await onLeasedPage(lease_id, timeout_ms, async (deadline, browser, context) => {
        if (screenshot !== true) return hostObservationOf(deadline, browser, await captureRevision(deadline, browser, NOT_WAITED), context, catalog);
        const { captured, picture } = await capturePictured(deadline, browser, NOT_WAITED);
        return { ...(await hostObservationOf(deadline, browser, captured, context, catalog)), viewport_jpeg: picture };
      });
      services.observations.record(receivedAt);
      return observation;
    },
    'page.act': ({ lease_id, action, target, elements, file, timeout_ms }) =>
      onLeasedPage(lease_id, timeout_ms, async (deadline, browser, context) => {
        browser.screenshots.writeBegins();
        browser.traffic.restartTrail();
        const settings = { ...config.settle, actionabilityMs: config.actionabilityMs };
        const captured: CapturedRevision = await actOnPage(deadline, browser, action, settings, () => void leases.check(lease_id), {
          target,
          elements,
          file,
        });
        shelveScreenshot(lease_id, browser, captured);
        return hostObservationOf(deadline, browser, captured, context, catalog);
      }),
    'page.screenshot': async ({ lease_id, revision, reference, timeout_ms }) => {
      if (!config.screenshots.enabled) throw new HostError('not_found', 'this host takes no screenshots (HOST_SCREENSHOTS=0)');
      if (reference === undefined) {
        const shelved = Deadline.after(timeout_ms);
        try {
          const picture = await leasedBrowser(lease_id).screenshots.get(lease_id, revision, shelved);
          if (picture !== undefined) return { ...picture, revision, box: null };
        } finally {
          shelved.dispose();
        }
      }
      return onLeasedPage(lease_id, timeout_ms, async (deadline, browser) => {
        if (browser.revisions.current !== revision || browser.revisions.invalidation !== undefined) {
          throw new HostError('stale_revision', `revision ${revision} is not the page's latest (${browser.revisions.current}); it can no longer be pictured`);
        }
        const page = await browser.page(deadline);
        const box = reference === undefined ? null : await boxOf(page.getByRef(reference), deadline);
        return { ...(await takeScreenshot(page, deadline, config.screenshots)), revision, box };
      });
    },
    'host.status': async () => services.status(),
    'host.drain': async () => drain.start(),
    'ceremony.begin': async (params) => {
      admitPlacement(params.profile_id, params.placement);
      return ceremonies.begin(params);
    },
    'ceremony.status': ({ ceremony_id }) => ceremonies.status(ceremony_id),
    'ceremony.end': async ({ ceremony_id }) => ({ ended: ceremonies.end(ceremony_id) }),
    'liveview.open': async ({ ceremony_id, profile_id, origin, generation, max_width, max_height }, connection) => {
      const page = ceremonies.surfaceOf(ceremony_id, profile_id, origin, generation);
      const viewId = await liveViews.open(ceremony_id, page, connection, max_width, max_height);
      // What the sign-in window refused before this view opened is told to it too.
      for (const sentence of ceremonies.noticesOf(ceremony_id)) liveViews.notice(ceremony_id, sentence);
      return { view_id: viewId };
    },
    'liveview.input': async ({ view_id, ack, frame_seq, events }) => {
      const view = liveViews.get(view_id);
      if (ack !== undefined) view.acknowledge(ack);
      return { applied: events.length === 0 ? 0 : await view.input(events, frame_seq) };
    },
    'liveview.close': async ({ view_id }) => ({ closed: liveViews.close(view_id) }),
  };
}
