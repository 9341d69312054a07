import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { ProfileId } from '../shared/protocol.ts';
import type { Deadline } from './deadline.ts';
import { Confinement, type EgressSettings, NO_EGRESS_SETTINGS } from './egress/confinement.ts';
import { startEgressProxy } from './egress/egress-proxy.ts';
import { firstLineOf, HostError } from './host-error.ts';
import { PageEvents } from './page/events.ts';

/**
 * The features Playwright 1.65 itself disables (its chromiumSwitches.ts): a `--disable-features`
 * of ours replaces Playwright's (the last switch wins), so the list is repeated here.
 */
const PLAYWRIGHT_DISABLED_FEATURES: readonly string[] = [
  'AvoidUnnecessaryBeforeUnloadCheckSync',
  'DestroyProfileOnBrowserClose',
  'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay',
  'MediaRouter',
  'PaintHolding',
  'ThirdPartyStoragePartitioning',
  'AvoidCorsURLLoaderRestartOnRedirect',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
  'SkipListAccountsWithoutGaiaCookies',
];

/**
 * The project's Chromium launch flags: no sandbox (containers), no GPU, and none of the background
 * traffic (updates, sync, QUIC) that would show up in settling's request snapshot. What any
 * Chromium the project starts gets (benchmarks' and tests' direct browsers too).
 */
export const BASE_CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/**
 * Flags every browser of the host gets: {@link BASE_CHROMIUM_ARGS}, the confinement's (README
 * "Confinement") and `--password-store=basic`, so cookies are encrypted with Chromium's fixed
 * Linux key rather than one kept in the machine's keyring, and a profile's snapshot decrypts on
 * whichever host it moves to (issue 32, DESIGN.md section 17).
 */
export const CHROMIUM_ARGS: readonly string[] = [
  ...BASE_CHROMIUM_ARGS,
  '--password-store=basic',
  // WebRTC must not open UDP paths around the egress proxy; WebTransport (QUIC over UDP) is off.
  '--webrtc-ip-handling-policy=disable_non_proxied_udp',
  '--disable-blink-features=WebTransport',
  // One renderer process per page, so the page's document guard sees every frame's navigations
  // (redirect hops of out-of-process frames would reach only the address check), and no prerender
  // of another origin. Frames of other origins never load anyway (README "Confinement").
  '--disable-site-isolation-trials',
  `--disable-features=${[...PLAYWRIGHT_DISABLED_FEATURES, 'IsolateOrigins', 'site-per-process', 'IsolateSandboxedIframes', 'Prerender2'].join(',')}`,
];

/** How to start Chromium for a profile. */
export interface LaunchOptions {
  readonly chromiumPath: string;
  readonly headless: boolean;
  /** `DISPLAY` for headed Chromium; ignored when headless. */
  readonly display: string | undefined;
  /** `XAUTHORITY` for headed Chromium: the authority file of `display`, if it needs one. */
  readonly xauthority?: string | undefined;
  readonly profilesDir: string;
  /**
   * Give the profile's Chromium a loopback DevTools port (`--remote-debugging-port=0`; Chromium
   * writes the port to `DevToolsActivePort` in the user-data directory) for a scripted person in
   * tests and demos (`HOST_PERSON_DEBUGGING`). Never for control loads.
   */
  readonly personDebugging?: boolean;
  /**
   * The egress proxy every request of this browser goes through (`http://127.0.0.1:<port>`,
   * loopback included; see egress/egress-proxy.ts). Profiles always have one.
   */
  readonly proxyServer?: string;
  /** The operator's egress origins and the host's own ports (README "Confinement"). */
  readonly egress?: EgressSettings;
  /** A host-private directory downloads are written to (page/downloads.ts); without one, downloads are refused. */
  readonly downloadsPath?: string;
}

/** Variables of the host's environment Chromium may see: locale and time zone. */
const CHROMIUM_ENV_ALLOWED = /^(LANG|LANGUAGE|LC_[A-Z]+|TZ)$/;

/**
 * The environment Chromium (and every page's renderer) gets: an allowlist, never the host's whole
 * environment (which may hold the API tokens after `set -a; . ./.dev.vars`): the locale and time
 * zone variables, `HOME` set to `home` (the profile's own directory), and when headed `DISPLAY`
 * and `XAUTHORITY` (the display's authority file). Nothing else.
 */
export function chromiumEnv(options: LaunchOptions, headless: boolean, home: string): Record<string, string> {
  const env: Record<string, string> = { HOME: home };
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && CHROMIUM_ENV_ALLOWED.test(key)) env[key] = value;
  if (!headless && options.display !== undefined) {
    env.DISPLAY = options.display;
    if (options.xauthority !== undefined) env.XAUTHORITY = options.xauthority;
  }
  return env;
}

/**
 * The sealed profile's persistent user-data directory, `<profilesDir>/<profileId>`, created if
 * missing. One directory per profile; the id's alphabet (letters, digits, `_`, `-`) keeps it
 * inside `profilesDir`.
 * @throws HostError('invalid_params') for an id outside that alphabet.
 */
export async function profileDirectory(profilesDir: string, profileId: string): Promise<string> {
  if (!ProfileId.safeParse(profileId).success) throw new HostError('invalid_params', 'profile_id: letters, digits, _ and -, at most 64');
  const dir = path.join(profilesDir, profileId);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/**
 * Playwright closes its browsers on SIGINT, SIGTERM and SIGHUP unless told not to; the host
 * handles those itself (SIGTERM drains: live leases finish on their browsers, issue 32), so a
 * browser is closed only by the host. Playwright still kills them when the process exits.
 */
const HOST_HANDLES_SIGNALS = { handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false } as const;

/**
 * Launches one Chromium on the profile's user-data directory as a Playwright persistent context
 * (one browser per profile). Headed unless configured headless, on `options.display` if given.
 * @throws HostError('host_unavailable') when Chromium does not start before the deadline.
 */
export async function launchProfileContext(deadline: Deadline, profileId: string, options: LaunchOptions): Promise<BrowserContext> {
  const userDataDir = await profileDirectory(options.profilesDir, profileId);
  // Playwright's own launch timeout, not a race: a race lost just before a late success would
  // leave a browser running that nobody owns.
  try {
    return await chromium.launchPersistentContext(userDataDir, {
      executablePath: options.chromiumPath,
      headless: options.headless,
      args: options.personDebugging === true ? [...CHROMIUM_ARGS, '--remote-debugging-port=0'] : [...CHROMIUM_ARGS],
      env: chromiumEnv(options, options.headless, userDataDir),
      // Downloads go only to the browser's private directory, bounded and never opened (page/downloads.ts).
      acceptDownloads: options.downloadsPath !== undefined,
      ...(options.downloadsPath === undefined ? {} : { downloadsPath: options.downloadsPath }),
      // A service worker's requests would bypass the page guards: none are registered.
      serviceWorkers: 'block',
      ...HOST_HANDLES_SIGNALS,
      // Playwright sends loopback through the proxy too (`<-loopback>`), so nothing bypasses it.
      ...(options.proxyServer === undefined ? {} : { proxy: { server: options.proxyServer } }),
      timeout: Math.max(1, deadline.remainingMs()),
    });
  } catch (error) {
    throw new HostError('host_unavailable', `Chromium for profile ${profileId} did not start: ${firstLineOf(error)}`, { cause: error });
  }
}

/** A clean, temporary browser for a differential control load, and how to get rid of it. */
export interface ControlBrowser {
  readonly context: BrowserContext;
  /** Closes Chromium and deletes its temporary user-data directory; never throws. Idempotent. */
  close(): Promise<void>;
}

/**
 * Launches a clean control browser (ADR-0164, unknown sites): a fresh Chromium with the same flags
 * as the profiles' and a fresh temporary user-data directory, in the profiles' launch mode (headed
 * on the host's display when they are), no DevTools port, presenting `userAgent` when given (the
 * profile's own), so a site cannot tell the two loads apart; behind its own egress proxy, which
 * lets it reach `origins` at any address and everything else only on public addresses.
 * @throws HostError('host_unavailable') when it does not start before the deadline (its
 *   directory is deleted again).
 */
export async function launchControlBrowser(
  deadline: Deadline,
  options: LaunchOptions,
  userAgent?: string,
  origins: readonly string[] = [],
): Promise<ControlBrowser> {
  // The control load goes wherever the site sends a first-time visitor (its sign-in page, an
  // identity provider), but through its own egress proxy: never to a forbidden address.
  const confinement = new Confinement(options.egress ?? NO_EGRESS_SETTINGS, new PageEvents());
  confinement.leaseOrigins = origins;
  const proxy = await startEgressProxy(confinement).catch((error: unknown) => {
    throw new HostError('host_unavailable', `the control browser's egress proxy did not start: ${firstLineOf(error)}`, { cause: error });
  });
  const dir = await mkdtemp(path.join(tmpdir(), 'host-control-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(dir, {
      executablePath: options.chromiumPath,
      // The profiles' launch mode: a headed window and a headless one differ in more than the
      // user agent (window chrome, sizes), and a site must not tell the two loads apart.
      headless: options.headless,
      args: [...CHROMIUM_ARGS],
      env: chromiumEnv(options, options.headless, dir),
      acceptDownloads: false,
      serviceWorkers: 'block',
      ...HOST_HANDLES_SIGNALS,
      proxy: { server: proxy.url },
      ...(userAgent ? { userAgent } : {}),
      timeout: Math.max(1, deadline.remainingMs()),
    });
  } catch (error) {
    // A launch that timed out may leave Chromium starting for a moment and writing into the
    // directory after a first removal: remove it again until it stays gone (bounded).
    for (let attempt = 0; attempt < 4; attempt++) {
      await rm(dir, { recursive: true, force: true }).catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 500));
      if (!existsSync(dir)) break;
    }
    await proxy.close();
    throw new HostError('host_unavailable', `the control browser did not start: ${firstLineOf(error)}`, { cause: error });
  }
  let closing: Promise<void> | undefined;
  return {
    context,
    close: () =>
      (closing ??= (async () => {
        await context.close().catch(() => {});
        await proxy.close();
        await rm(dir, { recursive: true, force: true }).catch(() => {});
      })()),
  };
}
