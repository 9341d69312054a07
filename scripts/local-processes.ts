import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: where the local stack's processes run. */
export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The lowest port the kernel hands out for outgoing connections and `listen(0)` (Linux's default start). */
function ephemeralPortsStart(): number {
  try {
    const start = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(start) && start > 10_000 ? start : 32_768;
  } catch {
    return 32_768;
  }
}

/** Where {@link freePort} draws from: this port up to the kernel's ephemeral range. */
const LOWEST_FREE_PORT = 10_000;

/**
 * A free loopback TCP port for a server a test or script starts (the edge, a host, an inspector),
 * drawn at random below the kernel's ephemeral range and checked by binding it. A port the kernel
 * chose (`listen(0)`) comes from the range outgoing connections use too: between this check and the
 * server's own bind, any connection on a busy machine (Chromium, a host's WebSocket, another stack)
 * could take it as its source port, and `wrangler dev` then failed with "Address already in use".
 * @throws Error when 50 random ports in a row are all taken.
 */
export async function freePort(): Promise<number> {
  const end = ephemeralPortsStart();
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = LOWEST_FREE_PORT + Math.floor(Math.random() * (end - LOWEST_FREE_PORT));
    if (await canListenOn(port)) return port;
  }
  throw new Error(`no free loopback port found from ${LOWEST_FREE_PORT} to ${end - 1}`);
}

/** Whether a server can listen on loopback `port` now (it is closed again before this resolves). */
function canListenOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A process the local stack started, with its last lines of output (at most 400, oldest first). */
export interface Started {
  readonly child: ChildProcess;
  readonly output: string[];
}

/** Whether the process has ended, by exiting or by a signal (`exitCode` stays null for the latter). */
export function hasEnded(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Starts `command` in the repository root as the leader of a new process group (so everything it
 * starts can be signalled at once), collecting its stdout and stderr line by line, and, with
 * `echo`, forwarding each line to this process's stderr prefixed `[name]`.
 */
export function startProcess(name: string, command: string, args: readonly string[], env: NodeJS.ProcessEnv, echo: boolean): Started {
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

/**
 * Polls `ready` every 200 ms until it is true.
 * @throws Error with the process's last 30 lines when it ends first or `timeoutMs` passes.
 */
export async function waitFor(what: string, started: Started, ready: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
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

/** Sends `signal` to the process group `pid` leads (0: only asks whether it exists); false when there is none any more. */
export function signalGroup(pid: number | undefined, signal: NodeJS.Signals | 0): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once the process has ended (at once when it already has). */
export function ended(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => (hasEnded(child) ? resolve() : child.once('exit', () => resolve())));
}

/**
 * Stops a process and its group: SIGCONT (a frozen group cannot act on SIGTERM), `signal`
 * (default SIGTERM; a browser host drains on SIGTERM and closes at once on SIGINT), SIGKILL
 * after 8 s if it has not exited, then SIGKILL to whatever is left of the group (workerd,
 * Chromium, Xvfb). Resolves when the leader has exited; at once when it already had.
 */
export async function stopProcess(started: Started, signal: 'SIGTERM' | 'SIGINT' = 'SIGTERM'): Promise<void> {
  const { child } = started;
  // A process that already ended (a SIGKILL'd host included) emits no second 'exit'.
  if (hasEnded(child) || child.pid === undefined) return;
  const exited = ended(child);
  signalGroup(child.pid, 'SIGCONT');
  signalGroup(child.pid, signal);
  const timer = setTimeout(() => signalGroup(child.pid, 'SIGKILL'), 8_000);
  await exited;
  clearTimeout(timer);
  signalGroup(child.pid, 'SIGKILL');
  await groupGone(child.pid);
}

/**
 * Resolves once no process of group `pid` is left (a Chromium the host started may outlive the
 * host by a moment, still writing its profile), polling every 50 ms for at most `timeoutMs` ms.
 */
async function groupGone(pid: number, timeoutMs = 3_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until && signalGroup(pid, 0)) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * SIGKILLs every process whose command line names `directory` (a Chromium runs in its own
 * process group, so a host's group does not hold it; its `--user-data-dir` names the stack's
 * scratch directory) and resolves once none is left, polling every 50 ms for at most
 * `timeoutMs` ms. Reads `/proc`; elsewhere it does nothing.
 */
export async function killProcessesUsing(directory: string, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const pids = processesMentioning(directory);
    if (pids.length === 0 || Date.now() >= until) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // It ended between the listing and the signal.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The ids of this machine's processes, other than this one, whose command line contains `text`. */
function processesMentioning(text: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(text)) pids.push(pid);
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids;
}
