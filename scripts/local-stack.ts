import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EdgeRuntime, edgeLaunchOf, prepareFreshLocalD1, queryLocalD1 } from './local-edge.ts';
import { type HostNetwork, type LocalHost, type ManagedHost, startLocalHost } from './local-hosts.ts';
import { freePort, killProcessesUsing, root, type Started, signalGroup, startProcess, stopProcess, waitFor } from './local-processes.ts';
import { DEFAULT_LOCAL_SQLITE_PATH, prepareLocalSqlite, querySqliteFile } from './local-sqlite.ts';
import { readDevVars } from './setup.mjs';
import { type StaticServer, startStaticServer } from './static-server.ts';
import { stopOnSignal } from './stop-on-signal.ts';

export type { EdgeRuntime } from './local-edge.ts';
export { queryLocalD1 } from './local-edge.ts';
export type { HostExit, HostNetwork, LocalHost } from './local-hosts.ts';
export { freePort } from './local-processes.ts';

/** Every runtime the edge runs on. */
export const EDGE_RUNTIMES: readonly EdgeRuntime[] = ['workers', 'node', 'deno'];

/** The local owner's principal id, as scripts/setup.mjs seeds it. */
export const LOCAL_OWNER_ID = 'prn_local_owner';

/** The real processes of a local system: the browser hosts, the edge, and the demo site. */
export interface LocalStack {
  readonly runtime: EdgeRuntime;
  /** `http://127.0.0.1:<port>` of the edge. */
  readonly edgeUrl: string;
  /** The ws:// URL of the first browser host, `host-1` (the edge's HOST_URL). */
  readonly hostUrl: string;
  /**
   * Every browser host, `host-1` first, each with its own port, data directory and process
   * (scripts/local-hosts.ts): the edge's HOST_URLS lists their {@link LocalHost.url}s in this order.
   */
  readonly hosts: readonly LocalHost[];
  /** Origin serving the npm package `todomvc` as it ships. */
  readonly siteOrigin: string;
  /** URL of the TodoMVC VanillaJS app. */
  readonly todoUrl: string;
  readonly tokens: { agent: string; owner: string; operator: string };
  /** Workers: the D1 state directory wrangler dev uses (a fresh temp dir, or undefined for the default one). */
  readonly persistTo: string | undefined;
  /** Deno and Node: the SQLite file the edge uses (a fresh temp file, or `.data/edge.sqlite`). */
  readonly sqlitePath: string | undefined;
  readonly hostSecret: string;
  /** The first host's profiles directory: one user-data directory per host profile id. */
  readonly profilesDir: string;
  /**
   * Runs read-only SQL statements against the edge's database and resolves to each statement's
   * rows: on Workers in one `wrangler d1 execute --local --json` (the local D1 wrangler dev
   * serves), on Deno and Node straight from the SQLite file. Same row shapes on all three.
   */
  queryD1(...statements: string[]): Promise<Record<string, unknown>[][]>;
  /** Kills the first browser host's process group at once (SIGKILL), as a crash would: `hosts[0].kill()`. */
  killHost(): Promise<void>;
  /**
   * With `hostRelay`, cuts every connection open between the edge and the hosts (the hosts and
   * their browsers go on; new connections work); returns how many were cut. Without it: 0.
   */
  cutHostConnections(): number;
  /**
   * Starts the first browser host again after {@link killHost}, on the same port, secret and
   * profiles directory (its browsers are new: nothing of the old pages survives); resolves when it
   * listens: `hosts[0].start()`.
   */
  startHost(): Promise<void>;
  /** Stops the edge process (its database stays), e.g. so a host callback finds nobody listening. */
  stopEdge(): Promise<void>;
  /** Starts the edge again on the same port and database after {@link stopEdge}; resolves when it answers. */
  startEdge(): Promise<void>;
  /**
   * Runs the cron pass now (`GET /__scheduled`: `wrangler dev --test-scheduled` on Workers, the
   * entries' `--test-scheduled` on Deno and Node); resolves when the trigger was accepted. On
   * Workers the pass itself runs under `ctx.waitUntil` and may still be running: wait for its
   * effect, not for this promise.
   */
  triggerCron(): Promise<void>;
  /**
   * The last lines (at most 400 each, oldest first) the hosts and the edge wrote to stdout and
   * stderr since they last started, each prefixed `[host]` (with several hosts `[host-2]`, ...)
   * or `[edge]`: what a failing test prints to say what happened.
   */
  recentOutput(): string[];
  /** Stops everything it started (process groups, SIGTERM then SIGKILL) and removes temp dirs. */
  stop(): Promise<void>;
}

export interface LocalStackOptions {
  /** Where the edge runs (default `workers`). */
  runtime?: EdgeRuntime;
  /** Edge port; default a free port (`npm run dev` passes EDGE_PORT or 8787). */
  edgePort?: number;
  /**
   * How many browser hosts, `host-1` ... `host-N` (default 1, at most 9): each its own process,
   * port, data directory and HOST_ID; the edge gets all of them (HOST_URLS).
   */
  hosts?: number;
  /** The first host's port; the others' follow it (`hostPort + 1`, ...). Default free ports. */
  hostPort?: number;
  /**
   * `fresh`: a new temp database, migrated and seeded; `default`: the persistent local one (the
   * D1 `npm run setup` prepared, or `.data/edge.sqlite` migrated and seeded here).
   */
  database?: 'fresh' | 'default';
  headless?: boolean;
  /** Forward the processes' output to this process's stderr, line by line, prefixed. */
  echo?: boolean;
  /** Extra edge vars (`wrangler dev --var NAME:value`, environment variables on Deno and Node), e.g. `TOOL_DEADLINE_MS`. */
  edgeVars?: Record<string, string>;
  /**
   * Extra environment of the browser host, e.g. `HOST_SITE_DEFINITIONS` (a catalog file) or
   * `HOST_PERSON_DEBUGGING: '1'` (scripts/person-at-browser.ts can then act as the person).
   * `HOST_EDGE_URL` is always the edge's URL, for ceremony callbacks.
   */
  hostVars?: Record<string, string>;
  /** The edge reaches each host through a loopback relay that {@link LocalStack.cutHostConnections} can cut (scripts/tcp-relay.ts). */
  hostRelay?: boolean;
  /**
   * Where host `id` runs on the network: a namespace of its own (test/support/host-network.ts),
   * given the loopback ports it must still reach (the edge's, the demo site's); undefined: this
   * machine's loopback. Called once per host before the edge starts.
   */
  hostNetwork?: (id: string, loopbackPorts: readonly number[]) => Promise<HostNetwork | undefined>;
}

/** Most hosts a local stack starts. */
export const MAX_LOCAL_HOSTS = 9;

/**
 * Starts the demo site, the browser hosts and the edge (on `options.runtime`) on loopback and
 * waits until each is ready (hosts: their listening line; edge: `GET /v1/health` answers 200).
 * Throws, after stopping what it started, when one of them does not come up within 90 s, or when
 * `options.hosts` is not a whole number from 1 to {@link MAX_LOCAL_HOSTS}.
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const hostCount = options.hosts ?? 1;
  if (!Number.isInteger(hostCount) || hostCount < 1 || hostCount > MAX_LOCAL_HOSTS)
    throw new Error(`hosts must be a whole number from 1 to ${MAX_LOCAL_HOSTS}`);
  const vars = readDevVars();
  const runtime = options.runtime ?? 'workers';
  const echo = options.echo ?? false;
  const scratch = mkdtempSync(join(tmpdir(), 'governed-browser-'));
  const fresh = options.database !== 'default';
  const persistTo = runtime === 'workers' && fresh ? join(scratch, 'd1') : undefined;
  const sqlitePath = runtime === 'workers' ? undefined : fresh ? join(scratch, 'edge.sqlite') : DEFAULT_LOCAL_SQLITE_PATH;
  if (persistTo) prepareFreshLocalD1(vars, persistTo);
  if (sqlitePath) await prepareLocalSqlite(vars, sqlitePath);

  const hosts: ManagedHost[] = [];
  let edge: Started | undefined;
  let site: StaticServer | undefined;
  // Once: a signal (stopOnSignal) and the script's own clean-up may both ask.
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      await Promise.all([...(edge ? [stopProcess(edge)] : []), ...hosts.map((host) => host.stop())]);
      await site?.close();
      // A Chromium is not in its host's process group: end whatever still works in the directory.
      await killProcessesUsing(scratch);
      // A process that just died may leave a file behind for a moment: retry, as rm -rf would.
      rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    })());
  const onExit = () => {
    for (const pid of [edge?.child.pid, ...hosts.map((host) => host.pid)]) {
      signalGroup(pid, 'SIGKILL');
    }
  };
  process.once('exit', onExit);
  const releaseSignals = stopOnSignal(stop);

  try {
    site = await startStaticServer(join(root, 'node_modules', 'todomvc'));
    const edgePort = options.edgePort ?? (await freePort());
    const edgeUrl = `http://127.0.0.1:${edgePort}`;
    const env = { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' };
    const hostPorts = await Promise.all(Array.from({ length: hostCount }, (_, i) => (options.hostPort === undefined ? freePort() : options.hostPort + i)));
    const siteOrigin = site.origin;
    const started = await Promise.allSettled(
      hostPorts.map(async (port, i) => {
        const id = `host-${i + 1}`;
        const network = await options.hostNetwork?.(id, [edgePort, Number(new URL(siteOrigin).port)]);
        const host = await startLocalHost({
          id,
          port,
          dataDir: join(scratch, 'hosts', id),
          env: { ...env, HOST_SHARED_SECRET: vars.HOST_SHARED_SECRET, HOST_EDGE_URL: edgeUrl, ...(options.hostVars ?? {}) },
          headless: options.headless ?? false,
          echoAs: echo ? (hostCount === 1 ? 'host' : id) : undefined,
          relay: options.hostRelay ?? false,
          network,
        });
        hosts[i] = host;
      }),
    );
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    const hostUrls = hosts.map((host) => host.url);

    const startEdge = async () => {
      const launch = edgeLaunchOf(runtime, {
        edgePort,
        inspectorPort: await freePort(),
        hostUrls,
        hostSecret: vars.HOST_SHARED_SECRET,
        persistTo,
        sqlitePath,
        artifactsDir: runtime !== 'workers' && fresh ? join(scratch, 'artifacts') : undefined,
        // Links in notices and webhooks are absolute, as a deployed edge's are with PUBLIC_URL.
        edgeVars: { PUBLIC_URL: edgeUrl, ...options.edgeVars },
      });
      const starting = startProcess('edge', launch.command, launch.args, { ...env, ...launch.env }, echo);
      edge = starting;
      await waitFor(
        runtime === 'workers' ? 'wrangler dev' : `the ${runtime} edge`,
        starting,
        async () => {
          try {
            return (await fetch(`${edgeUrl}/v1/health`)).status === 200;
          } catch {
            return false;
          }
        },
        90_000,
      );
    };
    const stopEdge = async () => {
      const running = edge;
      if (!running) return;
      edge = undefined;
      await stopProcess(running);
    };
    await startEdge();
    const first = hosts[0]!;

    return {
      runtime,
      edgeUrl,
      hostUrl: first.url,
      hosts,
      siteOrigin: site.origin,
      todoUrl: `${site.origin}/examples/vanillajs/index.html`,
      tokens: { agent: vars.AGENT_TOKEN, owner: vars.OWNER_TOKEN, operator: vars.OPERATOR_TOKEN },
      persistTo,
      sqlitePath,
      hostSecret: vars.HOST_SHARED_SECRET,
      profilesDir: first.profilesDir,
      stopEdge,
      startEdge,
      queryD1: (...statements) => (sqlitePath ? querySqliteFile(sqlitePath, statements) : queryLocalD1(statements, persistTo)),
      killHost: () => first.kill('SIGKILL'),
      cutHostConnections: () => hosts.reduce((count, host) => count + host.cutConnections(), 0),
      startHost: () => first.start(),
      recentOutput: () => [
        ...hosts.flatMap((host) => host.output().map((line) => `[${hostCount === 1 ? 'host' : host.id}] ${line}`)),
        ...(edge?.output.map((line) => `[edge] ${line}`) ?? []),
      ],
      triggerCron: async () => {
        // The self-hosted edges serve it to the operator only; wrangler dev ignores the header.
        const response = await fetch(`${edgeUrl}/__scheduled?cron=${encodeURIComponent('* * * * *')}`, {
          headers: { Authorization: `Bearer ${vars.OPERATOR_TOKEN}` },
        });
        if (!response.ok) throw new Error(`the cron trigger answered ${response.status}`);
      },
      stop: async () => {
        await stop();
        process.removeListener('exit', onExit);
        releaseSignals();
      },
    };
  } catch (error) {
    await stop();
    releaseSignals();
    throw error;
  }
}
