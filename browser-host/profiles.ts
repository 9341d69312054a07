import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { ProfileId } from '../shared/protocol.ts';
import type { Deadline } from './deadline.ts';
import { HostError, firstLineOf } from './host-error.ts';

/**
 * Chromium flags every browser gets: no sandbox (containers), no GPU, and none of the background
 * traffic (updates, sync, QUIC) that would show up in settling's request snapshot.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** How to start Chromium for a profile. */
export interface LaunchOptions {
  readonly chromiumPath: string;
  readonly headless: boolean;
  /** `DISPLAY` for headed Chromium; ignored when headless. */
  readonly display: string | undefined;
  readonly profilesDir: string;
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
 * Launches one Chromium on the profile's user-data directory as a Playwright persistent context
 * (one browser per profile). Headed unless configured headless, on `options.display` if given.
 * @throws HostError('host_unavailable') when Chromium does not start before the deadline.
 */
export async function launchProfileContext(deadline: Deadline, profileId: string, options: LaunchOptions): Promise<BrowserContext> {
  const userDataDir = await profileDirectory(options.profilesDir, profileId);
  // Chromium (and every page's renderer) gets the host's environment minus its secret.
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && key !== 'HOST_SHARED_SECRET') env[key] = value;
  if (!options.headless && options.display !== undefined) env.DISPLAY = options.display;
  // Playwright's own launch timeout, not a race: a race lost just before a late success would
  // leave a browser running that nobody owns.
  try {
    return await chromium.launchPersistentContext(userDataDir, {
      executablePath: options.chromiumPath,
      headless: options.headless,
      args: [...CHROMIUM_ARGS],
      env,
      // A page must not be able to write files onto the host's disk.
      acceptDownloads: false,
      timeout: Math.max(1, deadline.remainingMs()),
    });
  } catch (error) {
    throw new HostError('host_unavailable', `Chromium for profile ${profileId} did not start: ${firstLineOf(error)}`, { cause: error });
  }
}
