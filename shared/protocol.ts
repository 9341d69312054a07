import { z } from 'zod';
import { CEREMONY_METHODS, HostObservation } from './authentication.ts';
import { ErrorDetail } from './errors.ts';
import { PlacementGrant, RestoreReport } from './fleet.ts';
import { LIVE_VIEW_METHODS } from './live-view.ts';
import { Origin } from './origin.ts';
import { DownloadId, MAX_RUN_FILE_BYTES, RunFileName, WireDownload } from './run-files.ts';
import { BrowserAction, ContinuationCursor, ElementRef, HistoryMove, MAX_URL_LENGTH, Revision, ViewportPoint } from './tool-arguments.ts';

/**
 * The edge-host wire protocol: CDP-style JSON frames over one WebSocket.
 *
 * - the edge connects with a fresh nonce in the URL (`?nonce=`);
 * - hello (host to edge, first frame on every connection): `{method: 'host.hello', params}` with
 *   a token the host signed over that nonce, its id and a connection id (see `wire-auth.ts`);
 * - request (edge to host): `<token>\n{id, method, params}`; the token binds the body to the
 *   connection, the frame id and the method, and is checked before the body is parsed;
 * - response (host to edge): `{id, result, timings?}` (timings: {@link HostPhaseTimings}) or
 *   `{id, error: {code, message}}`.
 *
 * There is deliberately no method that passes raw CDP or scripts through.
 */

/** Identifier of a lease a run holds on one profile's browser. */
export const LeaseId = z.string().regex(/^lease_[A-Za-z0-9_-]{8,64}$/);
/** Identifier of a sealed browser profile (one persistent user-data directory). */
export const ProfileId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and -, at most 64');

/** Most origins one run (and so one lease) may name. */
export const MAX_RUN_ORIGINS = 32;

/**
 * What the element an act targets must still be right before the input (README "Confinement"):
 * its ARIA role and accessible name as the observation showed them, and the origin of the frame
 * holding it. The host fails the act `target_changed`, with nothing sent, when it is not.
 */
export const ExpectedTarget = z.strictObject({
  role: z.string().min(1).max(64),
  name: z.string().max(1000),
  frame_origin: z.string().max(300),
});
export type ExpectedTarget = z.infer<typeof ExpectedTarget>;

/**
 * What each further element an act touches (a drag's destination, every field of a fill_form and
 * its submit button; issue 33) must still be right before any input: its reference and the same
 * three facts as {@link ExpectedTarget}. The host checks all of them before the first input, so a
 * changed one means nothing at all is sent.
 */
export const ExpectedElement = ExpectedTarget.extend({ reference: ElementRef });
export type ExpectedElement = z.infer<typeof ExpectedElement>;

/**
 * The attached file an upload act sets (issue 33), as the edge read it from the artifact store:
 * its name, type and bytes (base64, at most {@link MAX_RUN_FILE_BYTES} decoded). The host writes it
 * into the file input and keeps no copy.
 */
export const UploadFile = z.strictObject({
  file_id: z.string().max(80),
  name: RunFileName,
  mime_type: z.string().min(1).max(200),
  data_base64: z.base64().max(Math.ceil(MAX_RUN_FILE_BYTES / 3) * 4),
});
export type UploadFile = z.infer<typeof UploadFile>;

/** Longest a single host operation may be given, in ms. */
export const MAX_OPERATION_TIMEOUT_MS = 120_000;
const timeoutMs = z.int().min(100).max(MAX_OPERATION_TIMEOUT_MS);

export const LeaseGrant = z.strictObject({
  lease_id: LeaseId,
  profile_id: ProfileId,
  generation: z.int().min(1),
  /** Epoch ms at which the lease lapses unless renewed. */
  expires_at_ms: z.int(),
  /**
   * `lease.acquire` with a placement, when it started the profile's browser: what it restored
   * (shared/fleet.ts). Absent when the profile's browser was already open, and on renewals.
   */
  restore: RestoreReport.optional(),
});
export type LeaseGrant = z.infer<typeof LeaseGrant>;

export const HostStatus = z.strictObject({
  host_id: z.string(),
  browsers: z.int().min(0),
  max_browsers: z.int().min(1),
  leases: z.int().min(0),
  waiting: z.int().min(0),
  headless: z.boolean(),
  /** Fresh captures served for plain `page.observe` since the host started. */
  observations_served: z.int().min(0),
  /** Epoch-ms arrival times of the most recent of those commands (at most 64), oldest first. */
  recent_observations_ms: z.array(z.int()).max(64),
  /** Temporary verification loads reserved against admission right now (two per remote verification). */
  verification_loads: z.int().min(0),
  /** Ceremonies waiting for a person or being verified. */
  ceremonies_open: z.int().min(0),
  /** The host's software version (package.json `version`, or `HOST_VERSION`). */
  version: z.string().max(64),
  /** True once the host was told to drain (`host.drain`, SIGTERM): it admits nothing new. */
  draining: z.boolean(),
  /** Profile snapshots written or being written and not yet accepted or refused by the edge. */
  snapshots_pending: z.int().min(0),
});
export type HostStatus = z.infer<typeof HostStatus>;

/** Largest screenshot the host sends, in bytes of JPEG (before base64). */
export const MAX_SCREENSHOT_BYTES = 256 * 1024;

/**
 * A box on a screenshot, in CSS px of the viewport (the picture's own pixels: screenshots are
 * taken at CSS scale), origin top left. It may reach outside the picture when the element is
 * partly scrolled out of view.
 */
export const ScreenshotBox = z.strictObject({
  x: z.number().finite(),
  y: z.number().finite(),
  width: z.number().finite().min(0),
  height: z.number().finite().min(0),
});
export type ScreenshotBox = z.infer<typeof ScreenshotBox>;

/**
 * A JPEG of the page's viewport as it was at `revision`, for the owner's console only (issue 15:
 * the agent's API never carries it): at most {@link MAX_SCREENSHOT_BYTES}, `width` x `height`
 * CSS px, taken at `taken_at_ms` (epoch ms). `box` is where the element of the requested
 * reference was on it, or null when none was asked for or it had no box (hidden, gone).
 */
export const PageScreenshot = z.strictObject({
  revision: z.int().min(1),
  jpeg_base64: z
    .string()
    .max(Math.ceil(MAX_SCREENSHOT_BYTES / 3) * 4)
    .regex(/^[A-Za-z0-9+/]+={0,2}$/),
  width: z.int().min(1).max(16_384),
  height: z.int().min(1).max(16_384),
  taken_at_ms: z.int().min(0),
  box: ScreenshotBox.nullable(),
});
export type PageScreenshot = z.infer<typeof PageScreenshot>;

/**
 * Every method the host serves: its params schema and its result schema. The host parses params
 * with these before doing anything; the edge parses results with them before trusting anything.
 */
export const HOST_METHODS = {
  'lease.acquire': {
    params: z.strictObject({
      run_id: z.string().min(1).max(64),
      profile_id: ProfileId,
      /**
       * The run's origins: the only ones the page may navigate to, frame or open while the lease
       * lives (README "Confinement").
       */
      origins: z.array(Origin).min(1).max(MAX_RUN_ORIGINS),
      /** Lease time-to-live in ms. */
      ttl_ms: z.int().min(1_000).max(3_600_000),
      /** How long to wait for an admission slot before failing `admission_full`, in ms. */
      wait_ms: z.int().min(0).max(60_000).optional(),
      /**
       * The profile's placement on this host (shared/fleet.ts): its fencing generation, snapshot
       * key and the snapshots to restore from. Absent: an edge without a fleet; no snapshots.
       */
      placement: PlacementGrant.optional(),
    }),
    result: LeaseGrant,
  },
  'lease.renew': {
    params: z.strictObject({ lease_id: LeaseId, ttl_ms: z.int().min(1_000).max(3_600_000) }),
    result: LeaseGrant,
  },
  'lease.release': {
    params: z.strictObject({ lease_id: LeaseId }),
    result: z.strictObject({ released: z.boolean() }),
  },
  /**
   * Loads `url`, or makes a history move (1.5.0) whose landing entry must still have
   * `expected_url` (the URL `page.history` reported and policy decided on; `target_changed`
   * otherwise, with nothing moved).
   */
  'page.navigate': {
    params: z.union([
      z.strictObject({ lease_id: LeaseId, url: z.string().min(1).max(MAX_URL_LENGTH), timeout_ms: timeoutMs }),
      z.strictObject({ lease_id: LeaseId, history: HistoryMove, expected_url: z.string().min(1).max(4096), timeout_ms: timeoutMs }),
    ]),
    result: HostObservation,
  },
  /** Observes the page; with `screenshot`, the answer carries a viewport JPEG of the same revision (1.5.0). */
  'page.observe': {
    params: z.strictObject({ lease_id: LeaseId, continuation: ContinuationCursor.optional(), screenshot: z.boolean().optional(), timeout_ms: timeoutMs }),
    result: HostObservation,
  },
  /**
   * Performs one action. `target` is what its element must still be; `elements` what every further
   * element it touches must still be (1.5.0); `file` the attached file an `upload` sets (required
   * for an upload, refused for anything else).
   */
  'page.act': {
    params: z.strictObject({
      lease_id: LeaseId,
      action: BrowserAction,
      target: ExpectedTarget.optional(),
      elements: z.array(ExpectedElement).max(40).optional(),
      file: UploadFile.optional(),
      timeout_ms: timeoutMs,
    }),
    result: HostObservation,
  },
  /**
   * The element at a point of the viewport screenshot of `revision` (1.5.0), found in an isolated
   * world through same-origin frames: the nearest actionable element there and its snapshot
   * reference. Reads only. `stale_revision` when `revision` is not the latest; `invalid_params`
   * when the point is outside the viewport or on nothing actionable.
   */
  'page.hit_test': {
    params: z.strictObject({ lease_id: LeaseId, revision: Revision, point: ViewportPoint, timeout_ms: timeoutMs }),
    result: z.strictObject({ reference: ElementRef }),
  },
  /**
   * The URL of the entry a history move would land on (1.5.0), without moving: the previous or
   * next entry of the tab's session history, or the current one for `reload`; null when there is
   * no such entry.
   */
  'page.history': {
    params: z.strictObject({ lease_id: LeaseId, history: HistoryMove, timeout_ms: timeoutMs }),
    result: z.strictObject({ url: z.string().max(4096).nullable() }),
  },
  /**
   * The bytes of a file the page downloaded (1.5.0), by the id an observation's `downloads`
   * reported; the host forgets it once read (`invalid_params` for an unknown or forgotten id).
   */
  'page.download': {
    params: z.strictObject({ lease_id: LeaseId, download_id: DownloadId, timeout_ms: timeoutMs }),
    result: WireDownload.extend({ data_base64: z.base64() }),
  },
  /**
   * A screenshot of the lease's page at `revision`: the one the host took right after the act or
   * navigation that produced it (its answer never waits for the picture), or, when `reference`
   * is given or none was kept, a fresh one with the element's box, taken only while `revision`
   * is still the page's latest (`stale_revision` otherwise).
   */
  'page.screenshot': {
    params: z.strictObject({ lease_id: LeaseId, revision: Revision, reference: ElementRef.optional(), timeout_ms: timeoutMs }),
    result: PageScreenshot,
  },
  'host.status': {
    params: z.strictObject({}),
    result: HostStatus,
  },
  /**
   * Starts draining (idempotent): from now on `lease.acquire` and `ceremony.begin` fail
   * `host_draining`; live leases and ceremonies finish, every profile is snapshotted as its hold
   * ends and its browser closed. `drained` is true once nothing is held, open or being written.
   */
  'host.drain': {
    params: z.strictObject({}),
    result: z.strictObject({ draining: z.literal(true), drained: z.boolean(), leases: z.int().min(0), snapshots_pending: z.int().min(0) }),
  },
  ...CEREMONY_METHODS,
  ...LIVE_VIEW_METHODS,
} as const;

export type HostMethod = keyof typeof HOST_METHODS;
export const HostMethodName = z.enum(Object.keys(HOST_METHODS) as [HostMethod, ...HostMethod[]]);
export type HostParams<M extends HostMethod> = z.infer<(typeof HOST_METHODS)[M]['params']>;
export type HostResult<M extends HostMethod> = z.infer<(typeof HOST_METHODS)[M]['result']>;

/** Largest frame either side accepts, in bytes. */
export const MAX_FRAME_BYTES = 4 * 1024 * 1024;

/** The body of a request frame (after its token) before its method is known; params are parsed per method afterwards. */
export const RequestFrame = z.strictObject({
  id: z.int().min(0).max(Number.MAX_SAFE_INTEGER),
  method: z.string().max(64),
  params: z.unknown(),
});
export type RequestFrame = z.infer<typeof RequestFrame>;

/**
 * Where a host operation's time went (issue 35), named as `npm run bench` prints them:
 * `queue` (waiting for the page's turn), `target_check` (the act's expected target against the
 * page), `actionability` (the trial that the element can take the input), `input` (the input
 * itself), `settle` (bounded settling, ADR-0159), `reach` (modal dialogs and `inert` subtrees),
 * `snapshot` (`page.ariaSnapshot({mode: 'ai'})` and the title), `frames` (frame confinement),
 * `marks` (names from content, `[inert]` marks, closed shadow roots), `sign_in` (the sign-in
 * signal), `screenshot` (the picture taken or handed off on the answer's path).
 */
export const HostPhase = z.enum(['queue', 'target_check', 'actionability', 'input', 'settle', 'reach', 'snapshot', 'frames', 'marks', 'sign_in', 'screenshot']);
export type HostPhase = z.infer<typeof HostPhase>;

/** Milliseconds per {@link HostPhase} of one answered operation (phases that ran concurrently each count whole). */
export const HostPhaseTimings = z.partialRecord(
  HostPhase,
  z
    .number()
    .min(0)
    .max(MAX_OPERATION_TIMEOUT_MS * 2),
);
export type HostPhaseTimings = z.infer<typeof HostPhaseTimings>;

export const ResponseFrame = z.union([
  z.strictObject({ id: z.int().min(0), result: z.unknown(), timings: HostPhaseTimings.optional() }),
  z.strictObject({ id: z.int().min(0).nullable(), error: ErrorDetail }),
]);
export type ResponseFrame = z.infer<typeof ResponseFrame>;

export const HelloFrame = z.strictObject({
  method: z.literal('host.hello'),
  params: z.strictObject({ host_id: z.string().max(128), auth: z.string().max(4096) }),
});
export type HelloFrame = z.infer<typeof HelloFrame>;
