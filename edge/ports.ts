import type { ResultSet } from '@libsql/client';
import type { BatchItem, BatchResponse } from 'drizzle-orm/batch';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type { UpgradeWebSocket } from 'hono/ws';
import type { AnticipationProvider } from '../shared/memories.ts';
import type { ArtifactStore } from './artifacts/artifact-store.ts';
import type * as schema from './db/schema.ts';
import { canonicalHostUrl } from './fleet/host-url.ts';
import type { HostDialer } from './host/host-session.ts';
import type { RequestProfile } from './metrics/request-profile.ts';
import { DEFAULT_QUOTAS, type QuotaConfig } from './quotas/quota-config.ts';

/**
 * The edge's side effects, built per request by the entry point (Workers, Deno, Node) and handed
 * to the app factory: the database, the browser host connection and the clock. Nothing in the app
 * keeps a client or socket at module scope.
 */
export interface Ports {
  /** drizzle over D1 on Workers, over a libSQL (SQLite) file on Deno and Node. */
  readonly db: Database;
  /**
   * Connects to the browser host at a URL (the fetch upgrade on Workers, a standard WebSocket on
   * Deno and Node). Which host a call goes to is the fleet's business (edge/fleet/).
   */
  readonly dial: HostDialer;
  /** Where the owner's screenshots are kept: R2 on Workers, files on Deno and Node (edge/artifacts/artifact-store.ts). */
  readonly artifacts: ArtifactStore;
  readonly clock: Clock;
  readonly config: EdgeConfig;
  /**
   * The anticipation provider runs start with (issue 34, edge/memories/provider.ts
   * `anticipationProviderFrom`: the model adapter when `ANTHROPIC_API_KEY` is set, else the
   * embedded lexical anticipator). Tests hand in a deterministic one.
   */
  readonly anticipator: AnticipationProvider;
  /** The secret shared with the browser host (`HOST_SHARED_SECRET`); verifies its ceremony events and snapshot tokens. */
  readonly hostSecret: string;
  /**
   * The edge's secret the profiles' snapshot keys are derived from (`PROFILE_SNAPSHOT_SECRET`;
   * `HOST_SHARED_SECRET` when unset): shared/fleet.ts `deriveSnapshotKey`.
   */
  readonly snapshotSecret: string;
  /**
   * Runs `task` after the request has answered, without holding the answer: `ctx.waitUntil` on
   * Workers, a detached promise on Deno and Node. A task that fails is logged with `what` and
   * never surfaces to the caller; whatever it does must be safe to lose (a maintenance pass
   * repeats it): Workers may cancel it 30 s after the answer, and a self-hosted edge that closes
   * does not wait for it. Its database statements are not in the request's `X-D1-Statements`.
   */
  readonly background: BackgroundRunner;
  /** The request's id (`X-Request-Id`), or the cron pass's: every log line of the request carries it. */
  readonly requestId: string;
  /** When set, the number of database statements this request sent so far (see `X-D1-Statements`). */
  readonly statementsSent?: () => number;
  /** When set, the number of round trips to the database this request made so far: a batch is one (see `X-D1-Round-Trips`). */
  readonly roundTripsMade?: () => number;
  /** When set, where this request's time goes (see `Server-Timing`, edge/metrics/request-profile.ts). */
  readonly profile?: RequestProfile;
  /**
   * The runtime's WebSocket upgrade for the owner's live view (issue 16): Hono's
   * `upgradeWebSocket` of `hono/cloudflare-workers`, `hono/deno` or `@hono/node-server`.
   * Undefined where the runtime has none (the live view then answers 404).
   */
  readonly upgradeWebSocket?: UpgradeWebSocket;
}

/**
 * What a write statement (`.run()`) answers: D1's result on Workers, libSQL's result set on Deno
 * and Node. Read the number of rows it changed with `rowsChanged` (edge/db/rows-changed.ts).
 */
export type RunResult = D1Result | ResultSet;

/**
 * The database every runtime hands the app: drizzle's async SQLite API over our schema, plus
 * `batch`, which runs its statements as one atomic unit (D1's batch; a libSQL transaction). Both
 * `drizzle-orm/d1` and `drizzle-orm/libsql` databases are this type; there are no interactive
 * transactions (D1 has none).
 */
export type Database = BaseSQLiteDatabase<'async', RunResult, typeof schema> & {
  batch<U extends BatchItem<'sqlite'>, T extends Readonly<[U, ...U[]]>>(batch: T): Promise<BatchResponse<T>>;
};

/** Hands `task` to the runtime to run after the answer; see {@link Ports.background}. */
export type BackgroundRunner = (what: string, task: () => Promise<unknown>) => void;

/**
 * A {@link BackgroundRunner} for runtimes without `waitUntil` (Deno, Node): the task runs as a
 * detached promise; a failure is logged with `requestId` and `what`, never thrown.
 * @param keepAlive receives each task's promise (Workers' `ctx.waitUntil`), when given.
 */
export function backgroundRunner(requestId: string, keepAlive?: (promise: Promise<unknown>) => void): BackgroundRunner {
  return (what, task) => {
    const promise = Promise.resolve()
      .then(task)
      .catch((error: unknown) => console.error(`[${requestId}] background task failed: ${what}`, error));
    keepAlive?.(promise);
  };
}

/** Wall-clock time and waiting; injected so tests and runtimes can substitute their own. */
export interface Clock {
  /** Epoch ms. */
  now(): number;
  /** Resolves after `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
}

/** The system clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** Settings the entry point reads from its environment. */
export interface EdgeConfig {
  /** Outer deadline of one tool call, in ms. */
  readonly toolDeadlineMs: number;
  /** Lease time-to-live requested from the host, in ms. */
  readonly leaseTtlMs: number;
  /**
   * How long an agent call's lease acquisition asks to wait for a browser, in ms (`ADMISSION_WAIT_MS`).
   * Undefined (the default): the host's own `HOST_ADMISSION_WAIT_MS` applies. Either way the
   * host waits at most its `HOST_ADMISSION_WAIT_MS`: that is the longest wait, this a shorter one.
   */
  readonly admissionWaitMs: number | undefined;
  /** Largest observation returned in a result, in bytes of JSON; larger ones are omitted whole. */
  readonly resultBudgetBytes: number;
  /** How long an agent's claim on a run lasts without a new proposal, in ms. */
  readonly claimTtlMs: number;
  /** Quotas and rate limits per owner and per agent (`QUOTA_*`). */
  readonly quotas: QuotaConfig;
  /** The edge's public base URL (`PUBLIC_URL`), for links into the console in webhooks; relative links when unset. */
  readonly publicUrl?: string;
  /** Most screenshots kept per owner (`ARTIFACT_MAX_PER_OWNER`); the oldest go first. */
  readonly artifactMaxPerOwner: number;
  /** Longest a screenshot is kept, in ms (`ARTIFACT_MAX_AGE_HOURS`, in hours). */
  readonly artifactMaxAgeMs: number;
  /**
   * The browser hosts listed in configuration (`HOST_URLS`, comma-separated ws:// or wss:// URLs;
   * else `HOST_URL`; else ws://127.0.0.1:8790). The operator API adds more (edge/fleet/registry.ts).
   */
  readonly hostUrls: readonly string[];
  /** Failed checks in a row after which a host is `unreachable` and its profiles move (`HOST_UNREACHABLE_AFTER_CHECKS`). */
  readonly hostUnreachableAfterChecks: number;
}

/** Defaults for {@link EdgeConfig}. */
export const DEFAULT_EDGE_CONFIG: EdgeConfig = {
  toolDeadlineMs: 30_000,
  leaseTtlMs: 300_000,
  admissionWaitMs: undefined,
  resultBudgetBytes: 64 * 1024,
  claimTtlMs: 120_000,
  quotas: DEFAULT_QUOTAS,
  artifactMaxPerOwner: 500,
  artifactMaxAgeMs: 7 * 24 * 3_600_000,
  hostUrls: ['ws://127.0.0.1:8790'],
  hostUnreachableAfterChecks: 2,
};

/**
 * The configured host URLs: `HOST_URLS` (comma-separated), else `HOST_URL`, else the default.
 * @throws Error for a URL that is not ws:// or wss://, or more than 64 of them.
 */
function hostUrlsFrom(vars: Record<string, unknown>): readonly string[] {
  const raw =
    typeof vars.HOST_URLS === 'string' && vars.HOST_URLS.trim() !== ''
      ? vars.HOST_URLS
      : typeof vars.HOST_URL === 'string' && vars.HOST_URL !== ''
        ? vars.HOST_URL
        : '';
  if (raw === '') return DEFAULT_EDGE_CONFIG.hostUrls;
  const listed = raw
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
  const urls = new Set<string>();
  for (const url of listed) {
    // The form POST /v1/hosts stores too, so one host listed both ways is one host.
    const canonical = canonicalHostUrl(url);
    if ('problem' in canonical) throw new Error(`HOST_URLS must list ws:// or wss:// URLs: ${canonical.problem}`);
    urls.add(canonical.url);
  }
  if (urls.size > 64) throw new Error(`HOST_URLS lists ${urls.size} hosts; at most 64`);
  return [...urls];
}

/**
 * Parses the edge's string settings (Workers vars, process env) over the defaults.
 * @throws Error for a setting that is not a positive integer.
 */
export function edgeConfigFrom(vars: Record<string, unknown>): EdgeConfig {
  const read = <Fallback extends number | undefined>(name: string, fallback: Fallback): number | Fallback => {
    const raw = vars[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got ${String(raw)}`);
    return value;
  };
  return {
    toolDeadlineMs: read('TOOL_DEADLINE_MS', DEFAULT_EDGE_CONFIG.toolDeadlineMs),
    leaseTtlMs: read('LEASE_TTL_MS', DEFAULT_EDGE_CONFIG.leaseTtlMs),
    admissionWaitMs: read('ADMISSION_WAIT_MS', DEFAULT_EDGE_CONFIG.admissionWaitMs),
    resultBudgetBytes: read('RESULT_BUDGET_BYTES', DEFAULT_EDGE_CONFIG.resultBudgetBytes),
    claimTtlMs: read('CLAIM_TTL_MS', DEFAULT_EDGE_CONFIG.claimTtlMs),
    artifactMaxPerOwner: read('ARTIFACT_MAX_PER_OWNER', DEFAULT_EDGE_CONFIG.artifactMaxPerOwner),
    artifactMaxAgeMs: read('ARTIFACT_MAX_AGE_HOURS', DEFAULT_EDGE_CONFIG.artifactMaxAgeMs / 3_600_000) * 3_600_000,
    hostUrls: hostUrlsFrom(vars),
    hostUnreachableAfterChecks: read('HOST_UNREACHABLE_AFTER_CHECKS', DEFAULT_EDGE_CONFIG.hostUnreachableAfterChecks),
    ...(typeof vars.PUBLIC_URL === 'string' && /^https?:\/\//.test(vars.PUBLIC_URL) ? { publicUrl: vars.PUBLIC_URL } : {}),
    quotas: {
      runsPerMinutePerAgent: read('QUOTA_RUNS_PER_MINUTE_PER_AGENT', DEFAULT_QUOTAS.runsPerMinutePerAgent),
      runsPerMinutePerOwner: read('QUOTA_RUNS_PER_MINUTE_PER_OWNER', DEFAULT_QUOTAS.runsPerMinutePerOwner),
      openRunsPerOwner: read('QUOTA_OPEN_RUNS_PER_OWNER', DEFAULT_QUOTAS.openRunsPerOwner),
      proposalsPerMinutePerAgent: read('QUOTA_PROPOSALS_PER_MINUTE_PER_AGENT', DEFAULT_QUOTAS.proposalsPerMinutePerAgent),
      proposalsPerMinutePerOwner: read('QUOTA_PROPOSALS_PER_MINUTE_PER_OWNER', DEFAULT_QUOTAS.proposalsPerMinutePerOwner),
      leasedBrowsersPerOwner: read('QUOTA_LEASED_BROWSERS_PER_OWNER', DEFAULT_QUOTAS.leasedBrowsersPerOwner),
    },
  };
}
