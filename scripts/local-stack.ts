import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DEFAULT_LOCAL_SQLITE_PATH, prepareLocalSqlite, querySqliteFile } from './local-sqlite.ts';
import { prepareLocalDatabase, readDevVars } from './setup.mjs';
import { type StaticServer, startStaticServer } from './static-server.ts';
import { startTcpRelay, type TcpRelay } from './tcp-relay.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const execFileAsync = promisify(execFile);

/**
 * Where the edge runs: `workers` under `wrangler dev` with a local D1; `node` (edge/node.ts) and
 * `deno` (edge/deno.ts) over a local SQLite file. The same app on all three.
 */
export type EdgeRuntime = 'workers' | 'node' | 'deno';

/** Every runtime the edge runs on. */
export const EDGE_RUNTIMES: readonly EdgeRuntime[] = ['workers', 'node', 'deno'];

/** The local owner's principal id, as scripts/setup.mjs seeds it. */
export const LOCAL_OWNER_ID = 'prn_local_owner';

/** The real processes of a local system: the browser host, the edge, and the demo site. */
export interface LocalStack {
  readonly runtime: EdgeRuntime;
  /** `http://127.0.0.1:<port>` of the edge. */
  readonly edgeUrl: string;
  /** `ws://127.0.0.1:<port>` of the browser host. */
  readonly hostUrl: string;
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
  /** The host's profiles directory: one user-data directory per host profile id. */
  readonly profilesDir: string;
  /**
   * Runs read-only SQL statements against the edge's database and resolves to each statement's
   * rows: on Workers in one `wrangler d1 execute --local --json` (the local D1 wrangler dev
   * serves), on Deno and Node straight from the SQLite file. Same row shapes on all three.
   */
  queryD1(...statements: string[]): Promise<Record<string, unknown>[][]>;
  /** Kills the browser host's process group at once (SIGKILL), as a crash would. */
  killHost(): Promise<void>;
  /**
   * With `hostRelay`, cuts every connection open between the edge and the host (the host and its
   * browsers go on; new connections work); returns how many were cut. Without it: 0, nothing cut.
   */
  cutHostConnections(): number;
  /**
   * Starts the browser host again after {@link killHost}, on the same port, secret and profiles
   * directory (its browsers are new: nothing of the old pages survives); resolves when it listens.
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
   * The last lines (at most 400 each, oldest first) the running host and edge wrote to stdout and
   * stderr, each prefixed `[host]` or `[edge]`: what a failing test prints to say what happened.
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
  /** Host port; default a free port. */
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
  /** The edge reaches the host through a loopback relay that {@link LocalStack.cutHostConnections} can cut (scripts/tcp-relay.ts). */
  hostRelay?: boolean;
}

/** A free loopback TCP port. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

interface Started {
  child: ChildProcess;
  output: string[];
}

/** Whether the process has ended, by exiting or by a signal (`exitCode` stays null for the latter). */
function hasEnded(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function startProcess(name: string, command: string, args: string[], env: NodeJS.ProcessEnv, echo: boolean): Started {
  const child = spawn(command, args, { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      if (!line.trim()) continue;
      output.push(line);
      if (output.length > 400) output.shift();
      if (echo) process.stderr.write(`[${name}] ${line}\n`);
    }
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  return { child, output };
}

async function waitFor(what: string, started: Started, ready: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (hasEnded(started.child)) {
      throw new Error(`${what} exited with ${started.child.signalCode ?? `code ${started.child.exitCode}`}:\n${started.output.slice(-30).join('\n')}`);
    }
    if (await ready()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${what} was not ready within ${timeoutMs} ms:\n${started.output.slice(-30).join('\n')}`);
}

async function stopProcess(started: Started): Promise<void> {
  const { child } = started;
  // A process that already ended (killHost's SIGKILL included) emits no second 'exit'.
  if (hasEnded(child) || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, name);
    } catch {
      // already gone
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), 8_000);
  await exited;
  clearTimeout(timer);
  signal('SIGKILL'); // anything left in the group (workerd, Chromium, Xvfb)
}

/**
 * Starts the demo site, the browser host and the edge (on `options.runtime`) on loopback and
 * waits until each is ready (host: its listening line; edge: `GET /v1/health` answers 200).
 * Throws, after stopping what it started, when one of them does not come up within 90 s.
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const vars = readDevVars();
  const runtime = options.runtime ?? 'workers';
  const echo = options.echo ?? false;
  const scratch = mkdtempSync(join(tmpdir(), 'governed-browser-'));
  const fresh = options.database !== 'default';
  const persistTo = runtime === 'workers' && fresh ? join(scratch, 'd1') : undefined;
  const sqlitePath = runtime === 'workers' ? undefined : fresh ? join(scratch, 'edge.sqlite') : DEFAULT_LOCAL_SQLITE_PATH;
  if (persistTo) prepareLocalDatabase(vars, persistTo);
  if (sqlitePath) await prepareLocalSqlite(vars, sqlitePath);

  const processes: Started[] = [];
  const profilesDir = join(scratch, 'profiles');
  let site: StaticServer | undefined;
  let relay: TcpRelay | undefined;
  const stop = async () => {
    await Promise.all(processes.reverse().map(stopProcess));
    await site?.close();
    await relay?.close();
    rmSync(scratch, { recursive: true, force: true });
  };
  const onExit = () => {
    for (const started of processes) {
      try {
        if (started.child.pid) process.kill(-started.child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  };
  process.once('exit', onExit);

  try {
    site = await startStaticServer(join(root, 'node_modules', 'todomvc'));
    const hostPort = options.hostPort ?? (await freePort());
    const edgePort = options.edgePort ?? (await freePort());
    const env = { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' };

    let host: Started | undefined;
    const startHost = async () => {
      const started = startProcess(
        'host',
        process.execPath,
        ['--import', 'tsx', 'browser-host/main.ts', ...(options.headless ? ['--headless'] : [])],
        {
          ...env,
          HOST_PORT: String(hostPort),
          HOST_SHARED_SECRET: vars.HOST_SHARED_SECRET,
          HOST_PROFILES_DIR: profilesDir,
          HOST_EDGE_URL: `http://127.0.0.1:${edgePort}`,
          ...(options.hostVars ?? {}),
        },
        echo,
      );
      host = started;
      processes.push(started);
      await waitFor('the browser host', started, () => started.output.some((line) => line.includes('browser-host listening on')), 90_000);
    };
    const killHost = async () => {
      const running = host;
      if (!running) return;
      host = undefined;
      const exited = new Promise<void>((resolve) => (hasEnded(running.child) ? resolve() : running.child.once('exit', () => resolve())));
      try {
        process.kill(-running.child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
      processes.splice(processes.indexOf(running), 1);
    };
    await startHost();

    if (options.hostRelay) relay = await startTcpRelay(hostPort);
    const hostUrl = `ws://127.0.0.1:${relay?.port ?? hostPort}`;
    const edgeUrl = `http://127.0.0.1:${edgePort}`;
    let edge: Started | undefined;
    const startEdge = async () => {
      const launch = edgeLaunchOf(runtime, {
        edgePort,
        inspectorPort: await freePort(),
        hostUrl,
        hostSecret: vars.HOST_SHARED_SECRET,
        persistTo,
        sqlitePath,
        artifactsDir: runtime !== 'workers' && fresh ? join(scratch, 'artifacts') : undefined,
        // Links in notices and webhooks are absolute, as a deployed edge's are with PUBLIC_URL.
        edgeVars: { PUBLIC_URL: edgeUrl, ...options.edgeVars },
      });
      const started = startProcess('edge', launch.command, launch.args, { ...env, ...launch.env }, echo);
      edge = started;
      processes.push(started);
      await waitFor(
        runtime === 'workers' ? 'wrangler dev' : `the ${runtime} edge`,
        started,
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
      processes.splice(processes.indexOf(running), 1);
    };
    await startEdge();

    return {
      runtime,
      edgeUrl,
      hostUrl,
      siteOrigin: site.origin,
      todoUrl: `${site.origin}/examples/vanillajs/index.html`,
      tokens: { agent: vars.AGENT_TOKEN, owner: vars.OWNER_TOKEN, operator: vars.OPERATOR_TOKEN },
      persistTo,
      sqlitePath,
      hostSecret: vars.HOST_SHARED_SECRET,
      profilesDir,
      stopEdge,
      startEdge,
      queryD1: (...statements) => (sqlitePath ? querySqliteFile(sqlitePath, statements) : queryLocalD1(statements, persistTo)),
      killHost,
      cutHostConnections: () => relay?.cut() ?? 0,
      startHost,
      recentOutput: () => [...(host?.output.map((line) => `[host] ${line}`) ?? []), ...(edge?.output.map((line) => `[edge] ${line}`) ?? [])],
      triggerCron: async () => {
        // The self-hosted edges serve it to the operator only; wrangler dev ignores the header.
        const response = await fetch(`${edgeUrl}/__scheduled?cron=${encodeURIComponent('* * * * *')}`, {
          headers: { Authorization: `Bearer ${vars.OPERATOR_TOKEN}` },
        });
        if (!response.ok) throw new Error(`the cron trigger answered ${response.status}`);
      },
      stop: async () => {
        process.removeListener('exit', onExit);
        await stop();
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Where and how an edge process is started. */
interface EdgeLaunch {
  command: string;
  args: string[];
  /** Added to the environment. */
  env: NodeJS.ProcessEnv;
}

/**
 * What starts the edge on `runtime`: `wrangler dev` with `--var`s for Workers; for Deno and Node
 * the npm scripts `edge:deno` and `edge:node` (so their flags and permissions live in one place,
 * package.json) with the Worker's vars as environment variables of the same names, plus the
 * port, the loopback address and the database file.
 */
function edgeLaunchOf(
  runtime: EdgeRuntime,
  where: {
    edgePort: number;
    inspectorPort: number;
    hostUrl: string;
    hostSecret: string;
    persistTo: string | undefined;
    sqlitePath: string | undefined;
    /** Where Deno and Node keep screenshots; undefined: their default, `.data/artifacts`. */
    artifactsDir: string | undefined;
    edgeVars: Record<string, string>;
  },
): EdgeLaunch {
  if (runtime !== 'workers') {
    return {
      command: 'npm',
      args: ['run', '--silent', `edge:${runtime}`, '--', '--test-scheduled'],
      env: {
        ...where.edgeVars,
        EDGE_PORT: String(where.edgePort),
        EDGE_BIND: '127.0.0.1',
        ...(where.sqlitePath ? { EDGE_SQLITE_PATH: where.sqlitePath } : {}),
        ...(where.artifactsDir ? { EDGE_ARTIFACTS_DIR: where.artifactsDir } : {}),
        HOST_URL: where.hostUrl,
        HOST_SHARED_SECRET: where.hostSecret,
        DENO_NO_UPDATE_CHECK: '1',
      },
    };
  }
  return {
    command: join(root, 'node_modules', '.bin', 'wrangler'),
    args: [
      'dev',
      '--local',
      '--ip',
      '127.0.0.1',
      '--port',
      String(where.edgePort),
      '--inspector-port',
      String(where.inspectorPort),
      '--show-interactive-dev-session=false',
      '--test-scheduled',
      '--var',
      `HOST_URL:${where.hostUrl}`,
      ...Object.entries(where.edgeVars).flatMap(([name, value]) => ['--var', `${name}:${value}`]),
      ...(where.persistTo ? ['--persist-to', where.persistTo] : []),
    ],
    env: {},
  };
}

/**
 * Rows of each statement (reads: a failed attempt is repeated) from a local D1 (`persistTo`, or
 * the default state dir), via wrangler.
 * Asynchronous on purpose: a blocked event loop lets HTTP keep-alive sockets go stale unseen.
 */
export async function queryLocalD1(statements: string[], persistTo?: string): Promise<Record<string, unknown>[][]> {
  const sql = statements.map((statement) => statement.trim().replace(/;$/, '')).join(';\n');
  const run = () =>
    execFileAsync(
      join(root, 'node_modules', '.bin', 'wrangler'),
      ['d1', 'execute', 'governed-browser', '--local', '--json', ...(persistTo ? ['--persist-to', persistTo] : []), '--command', sql],
      { cwd: root, env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' }, maxBuffer: 64 * 1024 * 1024 },
    );
  // The running `wrangler dev` holds the same SQLite file: a statement may meet it mid-write and
  // fail (the file is busy). Tests only read through this, so it is tried again, up to 5 times.
  let stdout = '';
  for (let attempt = 1; ; attempt++) {
    try {
      ({ stdout } = await run());
      break;
    } catch (error) {
      if (attempt >= LOCAL_D1_ATTEMPTS) {
        const stderr = (error as { stderr?: string }).stderr ?? '';
        throw new Error(`wrangler d1 execute failed ${attempt} times; last: ${stderr.trim().slice(-2_000) || String(error)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 300 * attempt));
    }
  }
  const parsed = JSON.parse(stdout) as Array<{ results: Record<string, unknown>[] }>;
  return parsed.map((statement) => statement.results);
}

/** How many times a local D1 statement is tried while `wrangler dev` holds the file. */
const LOCAL_D1_ATTEMPTS = 5;
