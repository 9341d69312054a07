import { drizzle } from 'drizzle-orm/d1';
import { upgradeWebSocket } from 'hono/cloudflare-workers';
import { createApp } from './app.ts';
import { r2ArtifactStore } from './artifacts/artifact-store.ts';
import { cronPass } from './cron-pass.ts';
import * as schema from './db/schema.ts';
import { countStatements } from './db/statement-counter.ts';
import { fetchUpgradeConnector } from './host/fetch-upgrade-connector.ts';
import { anticipationProviderFrom } from './memories/provider.ts';
import { profiledConnector, RequestProfile } from './metrics/request-profile.ts';
import { backgroundRunner, edgeConfigFrom, type Ports, systemClock } from './ports.ts';

/** Bindings and vars of the Worker (wrangler.toml, `.dev.vars`, `wrangler secret`). */
export interface WorkerEnv {
  DB: D1Database;
  /** The R2 bucket of the owner's screenshots (wrangler.toml `[[r2_buckets]]`). */
  ARTIFACTS: R2Bucket;
  /** ws:// or wss:// URL of the browser host, when there is one (`HOST_URLS` lists a fleet). */
  HOST_URL?: string;
  /** Comma-separated ws:// or wss:// URLs of the fleet's browser hosts (issue 32). */
  HOST_URLS?: string;
  /** The secret the profiles' snapshot keys are derived from; `HOST_SHARED_SECRET` when unset. */
  PROFILE_SNAPSHOT_SECRET?: string;
  /** Shared secret for edge-host wire tokens, at least 32 bytes. */
  HOST_SHARED_SECRET: string;
  TOOL_DEADLINE_MS?: string;
  LEASE_TTL_MS?: string;
  ADMISSION_WAIT_MS?: string;
  /**
   * `1`: count D1 statements per request and answer them in `X-D1-Statements`, the round trips
   * they took in `X-D1-Round-Trips`, and where the request's time went in `Server-Timing`
   * (edge/metrics/request-profile.ts).
   */
  D1_STATEMENT_COUNTER?: string;
  /** The model vendor's API key (a secret): anticipation asks the model adapter when it is set (issue 34). */
  ANTHROPIC_API_KEY?: string;
  /** The vendor API's base URL, when not the vendor's own (a local stand-in in tests). */
  ANTHROPIC_BASE_URL?: string;
  /** The model the model adapter asks (edge/memories/provider.ts `DEFAULT_MEMORY_MODEL` when unset). */
  MEMORY_MODEL?: string;
}

/**
 * The Workers entry: the only file that knows about Workers bindings. It wires D1 (through
 * drizzle), the fetch-upgrade WebSocket connector and the system clock into the shared app.
 */
function portsOf(env: WorkerEnv, ctx: Pick<ExecutionContext, 'waitUntil'>, requestId: string): Ports {
  const profile = env.D1_STATEMENT_COUNTER === '1' ? new RequestProfile() : undefined;
  const counter = profile ? countStatements(env.DB, profile) : undefined;
  const dial = (hostUrl: string) => {
    const host = fetchUpgradeConnector(hostUrl, env.HOST_SHARED_SECRET, profile);
    return profile ? profiledConnector(host, profile) : host;
  };
  return {
    db: drizzle(counter?.db ?? env.DB, { schema }),
    ...(counter && profile ? { statementsSent: counter.count, roundTripsMade: counter.roundTrips, profile } : {}),
    dial,
    artifacts: r2ArtifactStore(env.ARTIFACTS),
    upgradeWebSocket,
    clock: systemClock,
    background: backgroundRunner(requestId, (promise) => ctx.waitUntil(promise)),
    requestId,
    hostSecret: env.HOST_SHARED_SECRET,
    snapshotSecret: env.PROFILE_SNAPSHOT_SECRET || env.HOST_SHARED_SECRET,
    config: edgeConfigFrom(env as unknown as Record<string, unknown>),
    anticipator: anticipationProviderFrom(env as unknown as Record<string, unknown>),
  };
}

const app = createApp((c) => portsOf(c.env as unknown as WorkerEnv, c.executionCtx, c.var.requestId));

export default {
  fetch: app.fetch,
  /** The cron trigger: edge/cron-pass.ts (schedules due this minute, then sign-in maintenance). */
  async scheduled(controller, env, ctx) {
    const passId = `cron_${crypto.randomUUID()}`;
    ctx.waitUntil(cronPass(portsOf(env, ctx, passId), controller.scheduledTime));
  },
} satisfies ExportedHandler<WorkerEnv>;
