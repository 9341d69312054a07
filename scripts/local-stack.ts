import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareLocalDatabase, readDevVars } from './setup.mjs';
import { type StaticServer, startStaticServer } from './static-server.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const execFileAsync = promisify(execFile);

/** The real processes of a local system: the browser host, `wrangler dev`, and the demo site. */
export interface LocalStack {
  /** `http://127.0.0.1:<port>` of the edge (wrangler dev). */
  readonly edgeUrl: string;
  /** `ws://127.0.0.1:<port>` of the browser host. */
  readonly hostUrl: string;
  /** Origin serving the npm package `todomvc` as it ships. */
  readonly siteOrigin: string;
  /** URL of the TodoMVC VanillaJS app. */
  readonly todoUrl: string;
  readonly tokens: { agent: string; owner: string; operator: string };
  /** The D1 state directory wrangler dev uses (a fresh temp dir unless `persistTo` was given). */
  readonly persistTo: string | undefined;
  readonly hostSecret: string;
  /**
   * Runs read-only SQL statements against the edge's local D1 in one `wrangler d1 execute
   * --local --json` (the same database wrangler dev serves); resolves to each statement's rows.
   */
  queryD1(...statements: string[]): Promise<Record<string, unknown>[][]>;
  /** Kills the browser host's process group at once (SIGKILL), as a crash would. */
  killHost(): Promise<void>;
  /** Runs the Worker's cron pass now (`wrangler dev --test-scheduled`); resolves when it ran. */
  triggerCron(): Promise<void>;
  /** Stops everything it started (process groups, SIGTERM then SIGKILL) and removes temp dirs. */
  stop(): Promise<void>;
}

export interface LocalStackOptions {
  /** Edge port; default a free port (`npm run dev` passes EDGE_PORT or 8787). */
  edgePort?: number;
  /** Host port; default a free port. */
  hostPort?: number;
  /** `fresh`: a new temp D1, migrated and seeded; `default`: the one `npm run setup` prepared. */
  database?: 'fresh' | 'default';
  headless?: boolean;
  /** Forward the processes' output to this process's stderr, line by line, prefixed. */
  echo?: boolean;
  /** Extra edge vars (`wrangler dev --var NAME:value`), e.g. `TOOL_DEADLINE_MS`. */
  edgeVars?: Record<string, string>;
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
    if (started.child.exitCode !== null) {
      throw new Error(`${what} exited with code ${started.child.exitCode}:\n${started.output.slice(-30).join('\n')}`);
    }
    if (await ready()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${what} was not ready within ${timeoutMs} ms:\n${started.output.slice(-30).join('\n')}`);
}

async function stopProcess(started: Started): Promise<void> {
  const { child } = started;
  if (child.exitCode !== null || child.pid === undefined) return;
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
 * Starts the demo site, the browser host and `wrangler dev` on loopback and waits until each is
 * ready (host: its listening line; edge: `GET /v1/health` answers 200). Throws, after stopping
 * what it started, when one of them does not come up within 90 s.
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const vars = readDevVars();
  const echo = options.echo ?? false;
  const scratch = mkdtempSync(join(tmpdir(), 'governed-browser-'));
  const persistTo = options.database === 'default' ? undefined : join(scratch, 'd1');
  if (persistTo) prepareLocalDatabase(vars, persistTo);

  const processes: Started[] = [];
  let site: StaticServer | undefined;
  const stop = async () => {
    await Promise.all(processes.reverse().map(stopProcess));
    await site?.close();
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

    const host = startProcess(
      'host',
      process.execPath,
      ['--import', 'tsx', 'browser-host/main.ts', ...(options.headless ? ['--headless'] : [])],
      { ...env, HOST_PORT: String(hostPort), HOST_SHARED_SECRET: vars.HOST_SHARED_SECRET, HOST_PROFILES_DIR: join(scratch, 'profiles') },
      echo,
    );
    processes.push(host);
    await waitFor('the browser host', host, () => host.output.some((line) => line.includes('browser-host listening on')), 90_000);

    const hostUrl = `ws://127.0.0.1:${hostPort}`;
    const edge = startProcess(
      'edge',
      join(root, 'node_modules', '.bin', 'wrangler'),
      [
        'dev',
        '--local',
        '--ip',
        '127.0.0.1',
        '--port',
        String(edgePort),
        '--inspector-port',
        String(await freePort()),
        '--show-interactive-dev-session=false',
        '--test-scheduled',
        '--var',
        `HOST_URL:${hostUrl}`,
        ...Object.entries(options.edgeVars ?? {}).flatMap(([name, value]) => ['--var', `${name}:${value}`]),
        ...(persistTo ? ['--persist-to', persistTo] : []),
      ],
      env,
      echo,
    );
    processes.push(edge);
    const edgeUrl = `http://127.0.0.1:${edgePort}`;
    await waitFor(
      'wrangler dev',
      edge,
      async () => {
        try {
          return (await fetch(`${edgeUrl}/v1/health`)).status === 200;
        } catch {
          return false;
        }
      },
      90_000,
    );

    return {
      edgeUrl,
      hostUrl,
      siteOrigin: site.origin,
      todoUrl: `${site.origin}/examples/vanillajs/index.html`,
      tokens: { agent: vars.AGENT_TOKEN, owner: vars.OWNER_TOKEN, operator: vars.OPERATOR_TOKEN },
      persistTo,
      hostSecret: vars.HOST_SHARED_SECRET,
      queryD1: (...statements) => queryLocalD1(statements, persistTo),
      killHost: async () => {
        const exited = new Promise<void>((resolve) => (host.child.exitCode !== null ? resolve() : host.child.once('exit', () => resolve())));
        try {
          process.kill(-host.child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
        await exited;
      },
      triggerCron: async () => {
        const response = await fetch(`${edgeUrl}/__scheduled?cron=${encodeURIComponent('* * * * *')}`);
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

/**
 * Rows of each statement from a local D1 (`persistTo`, or the default state dir), via wrangler.
 * Asynchronous on purpose: a blocked event loop lets HTTP keep-alive sockets go stale unseen.
 */
export async function queryLocalD1(statements: string[], persistTo?: string): Promise<Record<string, unknown>[][]> {
  const sql = statements.map((statement) => statement.trim().replace(/;$/, '')).join(';\n');
  const { stdout } = await execFileAsync(
    join(root, 'node_modules', '.bin', 'wrangler'),
    ['d1', 'execute', 'governed-browser', '--local', '--json', ...(persistTo ? ['--persist-to', persistTo] : []), '--command', sql],
    { cwd: root, env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' }, maxBuffer: 64 * 1024 * 1024 },
  );
  const parsed = JSON.parse(stdout) as Array<{ results: Record<string, unknown>[] }>;
  return parsed.map((statement) => statement.results);
}
