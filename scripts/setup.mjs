#!/usr/bin/env node
// One-time (and idempotent) local set-up shared by `npm run demo`, `npm test`, `npm run dev` and
// `npm run bench`. Plain Node with no dependencies, because it runs before `npm ci` has.
//  0. Node 22 LTS, when the machine's Node is older: from the npm registry into `.toolchain/`
//     (scripts/toolchain.mjs); every step below, `npm ci` included, then runs on it;
//  1. npm packages, when node_modules was not installed from this package-lock.json (never through
//     a node_modules that is a link to another checkout's: that would empty the other one);
//  2. Debian's chromium and xvfb, when absent (apt-get as root; otherwise says what to run);
//  3. `.dev.vars` with AGENT_TOKEN, OWNER_TOKEN, OPERATOR_TOKEN and HOST_SHARED_SECRET, when missing;
//  4. the static files the edge serves (`public/`: the API reference's, copied from the npm
//     package swagger-ui-dist, and the owner console's, copied from edge/console/assets/);
//  5. the local D1: migrations applied and the three principals seeded (tokens stored hashed).
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { toolchainEnv } from './toolchain.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const say = (text) => console.log(`[setup] ${text}`);

function run(command, args, options = {}) {
  execFileSync(command, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], ...options });
}

/** Where node_modules records what it was installed from (see {@link recordNpmPackages}). */
const INSTALLED_FROM = '.installed-from';

/**
 * What `directory`'s npm packages need: `current` when node_modules was installed from the
 * package-lock.json there, by content (a fresh checkout's lock file is always newer than the
 * packages, so a date says nothing), and npm has not changed it since (`npm install` rewrites
 * `node_modules/.package-lock.json`); `install` when `npm ci` should run; `linked` when
 * node_modules is a link (to another checkout's, or to nothing) whose packages are not recorded
 * as installed from this lock: `npm ci` would empty them through the link, so it is not run.
 * A node_modules directory installed before the record existed counts as current while its
 * `.package-lock.json` is not older than the lock; a link never counts by date.
 */
export function npmPackagesState(directory) {
  const modules = join(directory, 'node_modules');
  let linked;
  try {
    linked = lstatSync(modules).isSymbolicLink();
  } catch {
    return 'install';
  }
  const recorded = readInstalledFrom(modules);
  if (recorded !== undefined) {
    if (recorded === installedFrom(directory)) return 'current';
    return linked ? 'linked' : 'install';
  }
  if (linked) return 'linked';
  const hidden = join(modules, '.package-lock.json');
  return existsSync(hidden) && statSync(hidden).mtimeMs >= statSync(join(directory, 'package-lock.json')).mtimeMs ? 'current' : 'install';
}

/**
 * Records in `directory`'s node_modules that it holds the packages of the package-lock.json
 * there, as npm left them: the sha256 of that lock and of `node_modules/.package-lock.json`.
 */
export function recordNpmPackages(directory) {
  writeFileSync(join(directory, 'node_modules', INSTALLED_FROM), `${installedFrom(directory)}\n`);
}

function installedFrom(directory) {
  const digest = (file) => (existsSync(file) ? createHash('sha256').update(readFileSync(file)).digest('hex') : 'none');
  return `lock ${digest(join(directory, 'package-lock.json'))} packages ${digest(join(directory, 'node_modules', '.package-lock.json'))}`;
}

function readInstalledFrom(modules) {
  try {
    return readFileSync(join(modules, INSTALLED_FROM), 'utf8').trim();
  } catch {
    return undefined;
  }
}

function ensureNodeModules() {
  const state = npmPackagesState(root);
  if (state === 'linked') {
    const modules = join(root, 'node_modules');
    const target = existsSync(modules) ? realpathSync(modules) : `${readlinkSync(modules)} (which does not exist)`;
    throw new Error(
      `node_modules is a link to ${target}, whose packages are not recorded as installed from this package-lock.json; ` +
        'npm ci here would empty them through the link: run `npm run setup` where the link points (with this lock), ' +
        'or replace the link with a directory of its own',
    );
  }
  if (state === 'install') {
    say('installing npm packages (npm ci)');
    run('npm', ['ci', '--no-audit', '--no-fund']);
  }
  // Through a link nothing is written: its record is the checkout's it points to.
  const modules = join(root, 'node_modules');
  if (state === 'install' || (!lstatSync(modules).isSymbolicLink() && readInstalledFrom(modules) === undefined)) recordNpmPackages(root);
}

function ensureDebianPackages() {
  const chromium = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
  const missing = [];
  // Headed Chromium runs under Xvfb (the demo and the tests); pages need real fonts to render.
  if (!existsSync('/usr/bin/chromium') && !process.env.CHROMIUM_PATH) missing.push('chromium');
  if (!existsSync('/usr/bin/Xvfb')) missing.push('xvfb');
  if (!existsSync('/usr/share/fonts/truetype/liberation')) missing.push('fonts-liberation');
  if (missing.length > 0) {
    if (process.getuid?.() !== 0) {
      throw new Error(`missing ${missing.join(', ')}: run  sudo apt-get install -y ${missing.join(' ')}`);
    }
    if (!existsSync('/usr/bin/apt-get')) throw new Error(`missing ${missing.join(', ')} and no apt-get to install them with`);
    say(`installing Debian packages: ${missing.join(', ')}`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    run('apt-get', ['update', '-qq'], { env });
    run('apt-get', ['install', '-y', '-qq', ...missing], { env });
  }
  if (!existsSync(chromium)) throw new Error(`CHROMIUM_PATH is ${chromium}, which does not exist`);
}

/** The files of swagger-ui-dist the API reference page (`/docs`) loads. */
const DOCS_ASSET_FILES = ['swagger-ui.css', 'swagger-ui-bundle.js'];
/** The owner console's static files (`edge/console/assets/`). */
const CONSOLE_ASSET_FILES = ['console.css', 'console.js', 'live-view.js'];

/**
 * Copies the static files the edge serves into `public/`, the directory the Worker serves as
 * static assets (wrangler.toml `[assets]`) and the Deno and Node entries serve too: the API
 * reference's script and style sheet from the npm package swagger-ui-dist (at
 * `/docs/assets/swagger-ui-dist/...`: the page never needs a CDN), and the owner console's style
 * sheet and scripts from `edge/console/assets/` (at `/console/assets/...`, so the console's pages
 * carry no inline script or style). Copies every time (five files, about 2 MB), so the copy always
 * matches the installed package and the repository's files.
 */
export function ensureStaticAssets() {
  const docsSource = join(root, 'node_modules', 'swagger-ui-dist');
  const docsTarget = join(root, 'public', 'docs', 'assets', 'swagger-ui-dist');
  mkdirSync(docsTarget, { recursive: true });
  for (const file of DOCS_ASSET_FILES) copyFileSync(join(docsSource, file), join(docsTarget, file));
  const consoleSource = join(root, 'edge', 'console', 'assets');
  const consoleTarget = join(root, 'public', 'console', 'assets');
  mkdirSync(consoleTarget, { recursive: true });
  for (const file of CONSOLE_ASSET_FILES) copyFileSync(join(consoleSource, file), join(consoleTarget, file));
}

/** Reads `.dev.vars` (KEY=value lines) and adds whichever local secrets are missing. */
function ensureDevVars() {
  const path = join(root, '.dev.vars');
  const vars = parseDevVars(existsSync(path) ? readFileSync(path, 'utf8') : '');
  const wanted = {
    AGENT_TOKEN: () => `agt_${randomBytes(24).toString('base64url')}`,
    OWNER_TOKEN: () => `own_${randomBytes(24).toString('base64url')}`,
    OPERATOR_TOKEN: () => `opr_${randomBytes(24).toString('base64url')}`,
    HOST_SHARED_SECRET: () => randomBytes(32).toString('base64url'),
  };
  const added = Object.keys(wanted).filter((key) => !vars[key]);
  if (added.length > 0) {
    for (const key of added) vars[key] = wanted[key]();
    const lines = Object.entries(vars).map(([key, value]) => `${key}="${value}"`);
    writeFileSync(path, `# Local development secrets (git-ignored), made by scripts/setup.mjs.\n${lines.join('\n')}\n`, { mode: 0o600 });
    say(`wrote ${added.join(', ')} to .dev.vars`);
  }
  return vars;
}

/** The principals the local tokens belong to: one owner, its agent and an operator. */
export function localPrincipalsSql(vars, now = Date.now()) {
  const hash = (token) => createHash('sha256').update(token).digest('hex');
  const rows = [
    ['prn_local_owner', 'owner', vars.OWNER_TOKEN, 'local owner'],
    ['prn_local_agent', 'agent', vars.AGENT_TOKEN, 'local agent'],
    ['prn_local_operator', 'operator', vars.OPERATOR_TOKEN, 'local operator'],
  ];
  return rows
    .map(
      ([id, kind, token, label]) =>
        `INSERT INTO principals (id, kind, owner_id, token_hash, label, created_at) VALUES ('${id}', '${kind}', 'prn_local_owner', '${hash(token)}', '${label}', ${now}) ` +
        `ON CONFLICT(id) DO UPDATE SET token_hash = excluded.token_hash;`,
    )
    .join(' ');
}

/** Applies the migrations to a local D1 (default state dir, or `persistTo`) and seeds principals. */
export function prepareLocalDatabase(vars, persistTo) {
  const wrangler = join(root, 'node_modules', '.bin', 'wrangler');
  const persist = persistTo ? ['--persist-to', persistTo] : [];
  const env = { ...process.env, CI: 'true', WRANGLER_SEND_METRICS: 'false' };
  const quiet = { env, stdio: ['ignore', 'pipe', 'inherit'] };
  run(wrangler, ['d1', 'migrations', 'apply', 'governed-browser', '--local', ...persist], quiet);
  run(wrangler, ['d1', 'execute', 'governed-browser', '--local', ...persist, '--command', localPrincipalsSql(vars)], quiet);
}

/** Reads `.dev.vars` without changing it. */
export function readDevVars() {
  return parseDevVars(readFileSync(join(root, '.dev.vars'), 'utf8'));
}

/** `KEY="value"` lines to an object; comments and other lines are ignored. */
function parseDevVars(text) {
  return Object.fromEntries(
    text
      .split('\n')
      .map((line) => line.match(/^\s*([A-Z_][A-Z0-9_]*)\s*=\s*"?([^"]*)"?\s*$/))
      .filter(Boolean)
      .map((match) => [match[1], match[2]]),
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    // Children (npm ci, wrangler) run on Node >= 22: npm under Node 22 has no engine to warn about.
    Object.assign(process.env, toolchainEnv(process.env));
    ensureNodeModules();
    ensureDebianPackages();
    const vars = ensureDevVars();
    ensureStaticAssets();
    say('applying D1 migrations to the local database and seeding principals');
    prepareLocalDatabase(vars);
    say('ready');
  } catch (error) {
    console.error(`[setup] failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
