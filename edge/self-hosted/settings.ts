import type { AnticipationProvider } from '../../shared/memories.ts';
import { MIN_SHARED_SECRET_BYTES } from '../../shared/wire-auth.ts';
import { anticipationProviderFrom } from '../memories/provider.ts';
import { type EdgeConfig, edgeConfigFrom } from '../ports.ts';

/**
 * Settings of the edge on Deno and Node, read from the environment with the same names as the
 * Worker's vars (`HOST_URLS`, `HOST_SHARED_SECRET`, `TOOL_DEADLINE_MS`, ...) plus what Workers
 * provides by itself there: the listening address, the database file and the artifact directory.
 */
export interface SelfHostedSettings {
  /** TCP port to listen on (`EDGE_PORT`, default 8787); 0 picks a free one. */
  readonly port: number;
  /** Address to listen on (`EDGE_BIND`, default 127.0.0.1): loopback unless deliberately changed. */
  readonly bind: string;
  /** The SQLite file (`EDGE_SQLITE_PATH`, default `.data/edge.sqlite`), relative to the working directory. */
  readonly sqlitePath: string;
  /** The directory of the owner's screenshots (`EDGE_ARTIFACTS_DIR`, default `.data/artifacts`), relative to the working directory. */
  readonly artifactsDir: string;
  /** Secret shared with the browser hosts (`HOST_SHARED_SECRET`, required, at least 32 bytes). */
  readonly hostSharedSecret: string;
  /** The secret the profiles' snapshot keys are derived from (`PROFILE_SNAPSHOT_SECRET`, default `HOST_SHARED_SECRET`). */
  readonly snapshotSecret: string;
  /**
   * `--test-scheduled`: also answer `GET /__scheduled` by running the cron pass at once, as
   * `wrangler dev --test-scheduled` does for the Worker. For local development and tests only.
   */
  readonly testScheduled: boolean;
  /** Deadlines and budgets, parsed exactly as the Worker parses its vars. */
  readonly edge: EdgeConfig;
  /** The anticipation provider, chosen exactly as the Worker chooses it (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `MEMORY_MODEL`). */
  readonly anticipator: AnticipationProvider;
}

/** Invalid settings: the message names the variable and what it must be. */
export class SettingsError extends Error {
  override readonly name = 'SettingsError';
}

/**
 * Reads the settings from environment variables and command-line arguments.
 * @param env the process environment (`process.env`, `Deno.env.toObject()`).
 * @param args command-line arguments after the script (only `--test-scheduled` is known).
 * @throws SettingsError for a missing or short secret, a bad port, a bad host URL (`HOST_URLS`, `HOST_URL`), an unknown
 *   argument, or an edge setting that is not a positive integer.
 */
export function selfHostedSettingsFrom(env: Record<string, string | undefined>, args: readonly string[]): SelfHostedSettings {
  const unknown = args.filter((arg) => arg !== '--test-scheduled');
  if (unknown.length > 0) throw new SettingsError(`unknown argument ${unknown[0]}; the only one is --test-scheduled`);

  const port = Number(env.EDGE_PORT || 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new SettingsError(`EDGE_PORT must be a TCP port, got ${env.EDGE_PORT}`);

  const hostSharedSecret = env.HOST_SHARED_SECRET ?? '';
  if (new TextEncoder().encode(hostSharedSecret).length < MIN_SHARED_SECRET_BYTES) {
    throw new SettingsError(`HOST_SHARED_SECRET must be set, at least ${MIN_SHARED_SECRET_BYTES} bytes (the browser host's secret)`);
  }

  let edge: EdgeConfig;
  try {
    edge = edgeConfigFrom(env);
  } catch (error) {
    throw new SettingsError(error instanceof Error ? error.message : String(error));
  }

  return {
    port,
    bind: env.EDGE_BIND || '127.0.0.1',
    sqlitePath: env.EDGE_SQLITE_PATH || '.data/edge.sqlite',
    artifactsDir: env.EDGE_ARTIFACTS_DIR || '.data/artifacts',
    hostSharedSecret,
    snapshotSecret: env.PROFILE_SNAPSHOT_SECRET || hostSharedSecret,
    testScheduled: args.includes('--test-scheduled'),
    edge,
    anticipator: anticipationProviderFrom(env),
  };
}
