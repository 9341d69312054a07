import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { SiteVerificationDefinition } from '../shared/authentication.ts';
import { canonicalOrigins, Origin } from '../shared/origin.ts';
import type { SignInWordAdditions } from '../shared/sign-in-words.ts';
import { MIN_SHARED_SECRET_BYTES } from '../shared/wire-auth.ts';
import { DEFAULT_SCREENSHOT_CONFIG, type ScreenshotConfig } from './screenshots.ts';
import { BUILT_IN_SITE_DEFINITIONS, readSiteCatalog, SiteCatalogError } from './site-verification/catalog.ts';

/**
 * Bounds of one observation window (DESIGN.md section 6): at most `maxNodes` snapshot lines and
 * at most `maxBytes` UTF-8 bytes of snapshot text.
 */
export interface WindowCaps {
  readonly maxNodes: number;
  readonly maxBytes: number;
}

/**
 * Settling numbers (ADR-0159): the whole budget from settling entry, the DOM-quiet period, and
 * the cap on the request snapshot, in ms, ms and requests. Defaults 2,000 / 300 / 256; tests may
 * shrink them.
 */
export interface SettleConfig {
  readonly budgetMs: number;
  readonly quietMs: number;
  readonly maxTrackedRequests: number;
}

/** Everything the host is configured with; see {@link parseHostConfig} for the sources. */
export interface HostConfig {
  /** TCP port of the WebSocket server; 0 picks any free port. */
  readonly port: number;
  /** Address to listen on; loopback unless an operator deliberately says otherwise. */
  readonly bind: string;
  /** HS256 secret shared with the edge, at least 32 bytes (shared/wire-auth.ts). */
  readonly sharedSecret: string;
  /** Name the host announces in its hello frame. */
  readonly hostId: string;
  readonly chromiumPath: string;
  readonly headless: boolean;
  /** X display for headed Chromium; when absent and headed, the host starts its own Xvfb. */
  readonly display: string | undefined;
  /** Directory holding one persistent user-data directory per profile. */
  readonly profilesDir: string;
  /** Most browsers open at once (DESIGN.md section 11: 3). */
  readonly maxBrowsers: number;
  /** Admission wait of `lease.acquire` without `wait_ms`, and the longest one with it, in ms. */
  readonly admissionWaitMs: number;
  /** Most `lease.acquire` calls waiting for admission at once; beyond it they fail at once. */
  readonly admissionQueueMax: number;
  /** Longest a browser launch may take, in ms. */
  readonly launchTimeoutMs: number;
  readonly window: WindowCaps;
  readonly settle: SettleConfig;
  /**
   * Site verification definitions (ADR-0164 part 2): the built-in ones (none) plus the operator's
   * catalog file; only enabled entries are used.
   */
  readonly siteDefinitions: readonly SiteVerificationDefinition[];
  /** Phrases the operator's catalog file adds to the sign-in word lists (issue 17); none by default. */
  readonly signInWords: SignInWordAdditions | undefined;
  /**
   * Base URL of the edge for ceremony event callbacks (`<edgeUrl>/v1/host/ceremony-events`) and
   * profile snapshots (`<edgeUrl>/v1/host/snapshots/...`, shared/fleet.ts); none: no callbacks,
   * and profiles are neither snapshotted nor restored.
   */
  readonly edgeUrl: string | undefined;
  /** The host's software version, as `host.status` reports it: `HOST_VERSION`, else package.json's `version`. */
  readonly version: string;
  /**
   * Spacing of the snapshots written while a lease or a ceremony holds a profile, in ms (issue
   * 32; a snapshot is also written whenever a hold ends).
   */
  readonly snapshotIntervalMs: number;
  /** Longest SIGTERM waits for the drain (leases finish, snapshots written) before closing anyway, in ms. */
  readonly drainTimeoutMs: number;
  /**
   * Give every profile's Chromium a loopback DevTools port (`--remote-debugging-port=0`, written
   * to `DevToolsActivePort` in its user-data directory), so a local script can act as the person
   * at the headed browser in tests and demos. Off in production.
   */
  readonly personDebugging: boolean;
  /** Spacing of a ceremony's surface polls, in ms. */
  readonly ceremonyPollMs: number;
  /**
   * The operator's egress origins (README "Confinement"): `allow`, origins pages may reach as
   * subresources even on a non-public address; `deny`, origins pages never reach.
   */
  readonly egress: {
    readonly allow: readonly string[];
    readonly deny: readonly string[];
    /**
     * Origins a person's sign-in window may go to besides the ceremony's own (identity providers,
     * DESIGN.md section 18); undefined: any origin on a public address.
     */
    readonly signIn?: readonly string[];
  };
  /**
   * How long an act's target may take to become able to receive the input (visible, stable,
   * enabled, not covered) before it fails `not_actionable` with nothing sent, in ms.
   */
  readonly actionabilityMs: number;
  /** Screenshots for the owner's console (`HOST_SCREENSHOTS`, `HOST_SCREENSHOT_QUALITY`). */
  readonly screenshots: ScreenshotConfig;
  /**
   * Whether answers carry where their time went (`HOST_PHASE_TIMINGS=1`; shared/protocol.ts
   * `HostPhaseTimings`): for benchmarks and profiling. Off by default, so an edge older than
   * issue 35, whose frame schema has no `timings`, keeps reading this host's answers.
   */
  readonly phaseTimings?: boolean;
}

/** Invalid configuration: the message names the variable and what it must be. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Fewest browsers a host may be configured for: a sign-in ceremony holds its profile's browser and
 * each verification reserves two temporary loads on top (ADR-0164), so fewer than three could
 * never verify a sign-in.
 */
export const MIN_BROWSERS = 3;

export const DEFAULT_WINDOW_CAPS: WindowCaps = { maxNodes: 400, maxBytes: 32 * 1024 };
export const DEFAULT_SETTLE_CONFIG: SettleConfig = { budgetMs: 2_000, quietMs: 300, maxTrackedRequests: 256 };

const integer = (min: number, max: number) => z.string().regex(/^\d+$/, 'a whole number').transform(Number).pipe(z.int().min(min).max(max));
const flag = z.enum(['1', '0', 'true', 'false', '']).transform((v) => v === '1' || v === 'true');

/** A comma-separated list of http(s) origins, e.g. `https://cdn.example,http://10.0.0.5:8080`. */
const originList = z
  .string()
  .transform((text) =>
    text
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== ''),
  )
  .pipe(z.array(Origin))
  .transform((origins) => canonicalOrigins(origins));

/** Default of `HOST_ACTIONABILITY_MS`, in ms. */
export const DEFAULT_ACTIONABILITY_MS = 5_000;
/** Default of `HOST_SNAPSHOT_INTERVAL_MS`, in ms: three minutes. */
export const DEFAULT_SNAPSHOT_INTERVAL_MS = 180_000;
/** Default of `HOST_DRAIN_TIMEOUT_MS`, in ms: two minutes. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 120_000;

/** The project's version (package.json), what a host reports unless `HOST_VERSION` says otherwise. */
export function packageVersion(): string {
  const text = readFileSync(new URL('../package.json', import.meta.url), 'utf8');
  return z.object({ version: z.string().min(1).max(64) }).parse(JSON.parse(text)).version;
}

const EnvSchema = z.object({
  HOST_PORT: integer(0, 65_535).default(8790),
  HOST_BIND: z.string().min(1).default('127.0.0.1'),
  HOST_SHARED_SECRET: z.string({ error: 'is required' }).refine((s) => new TextEncoder().encode(s).byteLength >= MIN_SHARED_SECRET_BYTES, {
    message: `must be at least ${MIN_SHARED_SECRET_BYTES} bytes`,
  }),
  HOST_ID: z.string().min(1).max(128).default('host-1'),
  CHROMIUM_PATH: z.string().min(1).default('/usr/bin/chromium'),
  HOST_HEADLESS: flag.default(false),
  HOST_PROFILES_DIR: z.string().min(1).optional(),
  HOST_MAX_BROWSERS: integer(MIN_BROWSERS, 64).default(3),
  HOST_ADMISSION_WAIT_MS: integer(0, 60_000).default(5_000),
  HOST_WINDOW_MAX_NODES: integer(1, 100_000).default(DEFAULT_WINDOW_CAPS.maxNodes),
  HOST_WINDOW_MAX_BYTES: integer(256, 1024 * 1024).default(DEFAULT_WINDOW_CAPS.maxBytes),
  HOST_SETTLE_BUDGET_MS: integer(0, 60_000).default(DEFAULT_SETTLE_CONFIG.budgetMs),
  HOST_SETTLE_QUIET_MS: integer(0, 10_000).default(DEFAULT_SETTLE_CONFIG.quietMs),
  HOST_SITE_DEFINITIONS: z.string().min(1).optional(),
  HOST_EDGE_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://127.0.0.1:8787' })
    .transform((url) => url.replace(/\/+$/, ''))
    .optional(),
  HOST_PERSON_DEBUGGING: flag.default(false),
  HOST_VERSION: z.string().min(1).max(64).optional(),
  HOST_SNAPSHOT_INTERVAL_MS: integer(1_000, 86_400_000).default(DEFAULT_SNAPSHOT_INTERVAL_MS),
  HOST_DRAIN_TIMEOUT_MS: integer(0, 3_600_000).default(DEFAULT_DRAIN_TIMEOUT_MS),
  HOST_CEREMONY_POLL_MS: integer(100, 60_000).default(1_000),
  HOST_EGRESS_ALLOW: originList.default([]),
  HOST_EGRESS_DENY: originList.default([]),
  HOST_SIGN_IN_ORIGINS: originList.optional(),
  HOST_ACTIONABILITY_MS: integer(100, 60_000).default(DEFAULT_ACTIONABILITY_MS),
  NODE_ENV: z.string().optional(),
  HOST_SCREENSHOTS: flag.default(DEFAULT_SCREENSHOT_CONFIG.enabled),
  HOST_SCREENSHOT_QUALITY: integer(10, 95).default(DEFAULT_SCREENSHOT_CONFIG.quality),
  HOST_PHASE_TIMINGS: flag.default(false),
  DISPLAY: z.string().optional(),
});

/**
 * Reads the host configuration from environment variables and command-line flags:
 * `HOST_PORT` (default 8790, 0 = any free port), `HOST_BIND` (default 127.0.0.1),
 * `HOST_SHARED_SECRET` (required, >= 32 bytes), `HOST_ID` (default host-1), `CHROMIUM_PATH`
 * (default /usr/bin/chromium), `HOST_HEADLESS=1` or `--headless` (default headed),
 * `HOST_PROFILES_DIR` (default `.profiles` under `cwd`), `HOST_MAX_BROWSERS` (default 3, at least 3),
 * `HOST_ADMISSION_WAIT_MS` (default 5,000 ms), `HOST_WINDOW_MAX_NODES` / `HOST_WINDOW_MAX_BYTES`
 * (default 400 nodes / 32 KiB), `HOST_SETTLE_BUDGET_MS` / `HOST_SETTLE_QUIET_MS` (default
 * 2,000 / 300 ms, ADR-0159), `DISPLAY`, and for sign-in ceremonies (ADR-0164):
 * `HOST_SITE_DEFINITIONS` (path of a site verification catalog file, JSON
 * `{definitions: [...], sign_in_words?: {...}}`, read and validated now; default none: the
 * built-in catalog is empty and the built-in sign-in word lists are used),
 * `HOST_EDGE_URL` (base URL of the edge, e.g. http://127.0.0.1:8787, for ceremony event
 * callbacks and profile snapshots; default none: the edge asks `ceremony.status`, and profiles are
 * neither snapshotted nor restored), for a fleet (issue 32): `HOST_SNAPSHOT_INTERVAL_MS` (default
 * 180,000 ms, 1,000-86,400,000: snapshots while a hold lasts), `HOST_DRAIN_TIMEOUT_MS` (default
 * 120,000 ms, 0-3,600,000: how long SIGTERM drains before it closes) and `HOST_VERSION` (default
 * package.json's `version`), `HOST_PERSON_DEBUGGING=1` (default
 * off: a loopback DevTools port per profile browser, for the scripted person of tests only;
 * refused with `NODE_ENV=production`)
 * and `HOST_CEREMONY_POLL_MS` (default 1,000 ms, 100-60,000); for the confinement (README
 * "Confinement"): `HOST_EGRESS_ALLOW` and `HOST_EGRESS_DENY` (comma-separated origins; default
 * none), `HOST_SIGN_IN_ORIGINS` (comma-separated origins a sign-in window may go to, such as
 * identity providers; default any origin on a public address) and `HOST_ACTIONABILITY_MS` (default 5,000 ms, 100-60,000); for the owner's console's
 * screenshots: `HOST_SCREENSHOTS=0` (default on) and `HOST_SCREENSHOT_QUALITY` (JPEG, default 60, 10-95);
 * for benchmarks: `HOST_PHASE_TIMINGS=1` (default off: answers carry their phase timings).
 * @throws ConfigError naming every invalid variable or unknown flag, or a catalog file that cannot
 *   be read or does not validate.
 */
export function parseHostConfig(env: Readonly<Record<string, string | undefined>>, argv: readonly string[] = [], cwd: string = process.cwd()): HostConfig {
  const unknownFlags = argv.filter((arg) => arg !== '--headless');
  const parsed = EnvSchema.safeParse(env);
  const problems = [
    ...unknownFlags.map((arg) => `unknown argument ${JSON.stringify(arg)} (the only flag is --headless)`),
    ...(parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`)),
  ];
  // The scripted person's DevTools port is for tests only (issue 16: owners sign in through the live view).
  if (parsed.success && parsed.data.HOST_PERSON_DEBUGGING && parsed.data.NODE_ENV === 'production') {
    problems.push('HOST_PERSON_DEBUGGING is a test-only setting and is refused when NODE_ENV=production (owners sign in through the live view)');
  }
  if (!parsed.success || problems.length > 0) throw new ConfigError(`invalid browser-host configuration: ${problems.join('; ')}`);
  const e = parsed.data;
  let siteDefinitions: readonly SiteVerificationDefinition[] = BUILT_IN_SITE_DEFINITIONS;
  let signInWords: SignInWordAdditions | undefined;
  if (e.HOST_SITE_DEFINITIONS !== undefined) {
    try {
      const file = readSiteCatalog(path.resolve(cwd, e.HOST_SITE_DEFINITIONS));
      siteDefinitions = [...BUILT_IN_SITE_DEFINITIONS, ...file.definitions];
      signInWords = file.signInWords;
    } catch (error) {
      if (!(error instanceof SiteCatalogError)) throw error;
      throw new ConfigError(`invalid browser-host configuration: HOST_SITE_DEFINITIONS ${error.message}`);
    }
  }
  return {
    port: e.HOST_PORT,
    bind: e.HOST_BIND,
    sharedSecret: e.HOST_SHARED_SECRET,
    hostId: e.HOST_ID,
    chromiumPath: e.CHROMIUM_PATH,
    headless: e.HOST_HEADLESS || argv.includes('--headless'),
    display: e.DISPLAY === '' ? undefined : e.DISPLAY,
    profilesDir: path.resolve(cwd, e.HOST_PROFILES_DIR ?? '.profiles'),
    maxBrowsers: e.HOST_MAX_BROWSERS,
    admissionWaitMs: e.HOST_ADMISSION_WAIT_MS,
    admissionQueueMax: 64,
    launchTimeoutMs: 30_000,
    window: { maxNodes: e.HOST_WINDOW_MAX_NODES, maxBytes: e.HOST_WINDOW_MAX_BYTES },
    settle: { ...DEFAULT_SETTLE_CONFIG, budgetMs: e.HOST_SETTLE_BUDGET_MS, quietMs: e.HOST_SETTLE_QUIET_MS },
    siteDefinitions,
    signInWords,
    edgeUrl: e.HOST_EDGE_URL,
    version: e.HOST_VERSION ?? packageVersion(),
    snapshotIntervalMs: e.HOST_SNAPSHOT_INTERVAL_MS,
    drainTimeoutMs: e.HOST_DRAIN_TIMEOUT_MS,
    personDebugging: e.HOST_PERSON_DEBUGGING,
    ceremonyPollMs: e.HOST_CEREMONY_POLL_MS,
    egress: { allow: e.HOST_EGRESS_ALLOW, deny: e.HOST_EGRESS_DENY, ...(e.HOST_SIGN_IN_ORIGINS === undefined ? {} : { signIn: e.HOST_SIGN_IN_ORIGINS }) },
    actionabilityMs: e.HOST_ACTIONABILITY_MS,
    screenshots: { enabled: e.HOST_SCREENSHOTS, quality: e.HOST_SCREENSHOT_QUALITY },
    phaseTimings: e.HOST_PHASE_TIMINGS,
  };
}
