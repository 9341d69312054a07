import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root } from './local-processes.ts';
import { type DevVars, localPrincipalsSql, prepareLocalDatabase } from './setup.mjs';

const execFileAsync = promisify(execFile);

/**
 * Where the edge runs: `workers` under `wrangler dev` with a local D1; `node` (edge/node.ts) and
 * `deno` (edge/deno.ts) over a local SQLite file. The same app on all three.
 */
export type EdgeRuntime = 'workers' | 'node' | 'deno';

/** Where and how an edge process is started. */
export interface EdgeLaunch {
  command: string;
  args: string[];
  /** Added to the environment. */
  env: NodeJS.ProcessEnv;
}

/** What an edge process is started with. */
export interface EdgeWhere {
  edgePort: number;
  inspectorPort: number;
  /** The ws:// URL of every host, `host-1` first. HOST_URL is the first (until the edge reads HOST_URLS), HOST_URLS all of them, comma-separated. */
  hostUrls: readonly string[];
  hostSecret: string;
  persistTo: string | undefined;
  sqlitePath: string | undefined;
  /** Where Deno and Node keep screenshots; undefined: their default, `.data/artifacts`. */
  artifactsDir: string | undefined;
  edgeVars: Record<string, string>;
}

/**
 * What starts the edge on `runtime`: `wrangler dev` with `--var`s for Workers; for Deno and Node
 * the npm scripts `edge:deno` and `edge:node` (so their flags and permissions live in one place,
 * package.json) with the Worker's vars as environment variables of the same names, plus the
 * port, the loopback address and the database file.
 */
export function edgeLaunchOf(runtime: EdgeRuntime, where: EdgeWhere): EdgeLaunch {
  const hosts = { HOST_URL: where.hostUrls[0]!, HOST_URLS: where.hostUrls.join(',') };
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
        ...hosts,
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
      ...Object.entries({ ...hosts, ...where.edgeVars }).flatMap(([name, value]) => ['--var', `${name}:${value}`]),
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

/** Where migrated and seeded local D1 state directories are kept, one per {@link freshD1Key}. */
export const D1_TEMPLATES_DIR = join(root, '.tmp', 'd1-templates');

/**
 * What a fresh local D1 is made of: the migrations (every file under drizzle/), wrangler.toml, the
 * local principals' token hashes, scripts/setup.mjs (which applies and seeds) and the installed
 * wrangler's version; a sha256, hex.
 */
export function freshD1Key(vars: DevVars): string {
  const hash = createHash('sha256');
  const drizzle = join(root, 'drizzle');
  const files = readdirSync(drizzle, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  for (const file of files) hash.update(file.slice(root.length)).update(readFileSync(file));
  hash.update(readFileSync(join(root, 'wrangler.toml')));
  hash.update(localPrincipalsSql(vars, 0));
  // How the template is made (prepareLocalDatabase's steps): a seeding step added there is a new database.
  hash.update(readFileSync(join(root, 'scripts', 'setup.mjs')));
  hash.update(readFileSync(join(root, 'node_modules', 'wrangler', 'package.json')));
  return hash.digest('hex');
}

/** The file a template holds once it is whole: written last, after wrangler applied and seeded. */
const TEMPLATE_WHOLE = '.template-whole';

/**
 * Makes `persistTo` (a directory that does not exist yet) a local D1 state directory with every
 * migration applied and the local principals seeded, as `prepareLocalDatabase` (scripts/setup.mjs)
 * makes one. The first call for a {@link freshD1Key} runs `prepareLocalDatabase` once (the real
 * `wrangler d1 migrations apply --local`, about 9 s on 2 cores) into `templatesDir` (default
 * `.tmp/d1-templates/`); every call copies that directory (about 1 MB), so each end-to-end stack
 * still starts on a database of its own. A template of another key is removed when a new one is
 * made, and so is a half-built one whose process has ended (killed mid-build, it never reached its
 * own clean-up). Concurrent first calls each build one and the first to finish keeps its own.
 * A template is used only when it holds its mark of being whole (`.template-whole`, written after
 * wrangler finished): one emptied or cut short is built again. A template is never removed in
 * place: it is first moved aside in one rename, so a copy of it either completes before that or
 * fails; a copy that fails is removed and made again once.
 * Throws what `prepareLocalDatabase` throws (wrangler's exit), or the second copy's error.
 */
export function prepareFreshLocalD1(vars: DevVars, persistTo: string, templatesDir = D1_TEMPLATES_DIR): void {
  for (let attempt = 1; ; attempt++) {
    const template = wholeTemplate(vars, templatesDir);
    try {
      cpSync(template, persistTo, { recursive: true });
      if (existsSync(join(persistTo, TEMPLATE_WHOLE))) return;
      throw new Error(`the local D1 template ${template} was not whole when it was copied`);
    } catch (error) {
      // Its template was moved aside while it was copied: what came across goes.
      rmSync(persistTo, { recursive: true, force: true });
      if (attempt >= 2) throw error;
    }
  }
}

/** The directory of {@link freshD1Key}'s whole template under `templatesDir`, built when there is none. */
function wholeTemplate(vars: DevVars, templatesDir: string): string {
  const key = freshD1Key(vars);
  const template = join(templatesDir, key);
  if (!existsSync(join(template, TEMPLATE_WHOLE))) {
    mkdirSync(templatesDir, { recursive: true });
    const building = join(templatesDir, `${key}.building-${process.pid}`);
    rmSync(building, { recursive: true, force: true });
    try {
      prepareLocalDatabase(vars, building);
      writeFileSync(join(building, TEMPLATE_WHOLE), `${key}\n`);
    } catch (error) {
      rmSync(building, { recursive: true, force: true });
      throw error;
    }
    // One that is not whole goes first (a rename does not replace a directory that has files).
    if (existsSync(template) && !existsSync(join(template, TEMPLATE_WHOLE))) discardTemplate(template);
    try {
      renameSync(building, template);
    } catch (error) {
      // Another process finished first: its template is the same.
      rmSync(building, { recursive: true, force: true });
      if (!existsSync(join(template, TEMPLATE_WHOLE))) throw error;
    }
    for (const entry of readdirSync(templatesDir)) {
      // A directory being built or removed is another process's while that process lives.
      const owner = entry.match(/\.(building|removing)-(\d+)(?:-\d+)?$/);
      if (owner !== null) {
        if (!isAlive(Number(owner[2]))) rmSync(join(templatesDir, entry), { recursive: true, force: true });
      } else if (entry !== key) discardTemplate(join(templatesDir, entry));
    }
  }
  return template;
}

/**
 * Removes the template at `template`, moving it aside first in one rename (a copy under way then
 * fails instead of completing with what was left). Nothing happens when another process moved it first.
 */
function discardTemplate(template: string): void {
  const aside = `${template}.removing-${process.pid}-${++discarded}`;
  try {
    renameSync(template, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  rmSync(aside, { recursive: true, force: true });
}

/** Templates this process moved aside so far: each gets a name of its own. */
let discarded = 0;

/** Whether a process `pid` exists (signal 0: nothing is sent; EPERM: it exists, owned by another user). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
