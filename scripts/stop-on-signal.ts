import { constants } from 'node:os';

/**
 * What a script's processes (a local stack's edge, hosts, Chromium, Xvfb) need when the script
 * is stopped by a signal: Node's default for SIGINT, SIGTERM and SIGHUP ends the process at once,
 * without its `finally` blocks or `exit` handlers, and the processes it started in groups of their
 * own (scripts/local-processes.ts) would go on running, holding their ports and profiles. Ctrl-C
 * on `npm run demo` or `npm run bench` did exactly that.
 */

/** The signals that stop a script: a terminal's Ctrl-C, `kill`, a closed terminal. */
const STOPPING_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * A stopping signal this long or more after the first ends the process at once; sooner, it is a
 * copy of the first: Ctrl-C reaches the whole foreground process group, and npm and
 * scripts/toolchain.mjs each relay what they get, so a script may get the same SIGINT three
 * times within milliseconds (the browser host counts repeats the same way, browser-host/main.ts).
 */
const REPEATED_SIGNAL_MS = 1_000;

/** What {@link stopOnSignal} was given and not yet released. */
const pending = new Set<() => Promise<void>>();
let installed = false;
/** When the first stopping signal came (performance.now(), ms); undefined before. */
let stoppingSince: number | undefined;

/** Ends the process as the signal would have: exit status 128 + the signal's number. */
function exitFor(signal: (typeof STOPPING_SIGNALS)[number]): never {
  process.exit(128 + constants.signals[signal]);
}

function onStoppingSignal(signal: (typeof STOPPING_SIGNALS)[number]): void {
  // Another signal while stopping: a copy of the first, or the person insisting: end now
  // (`exit` handlers still kill the process groups).
  if (stoppingSince !== undefined) {
    if (performance.now() - stoppingSince >= REPEATED_SIGNAL_MS) exitFor(signal);
    return;
  }
  stoppingSince = performance.now();
  console.error(`\n${signal}: stopping what this script started...`);
  void Promise.allSettled([...pending].map((stop) => stop())).finally(() => exitFor(signal));
}

/**
 * Registers `stop` to run when this process gets SIGINT, SIGTERM or SIGHUP, after which the
 * process exits with 128 + the signal's number; another signal a second or more after the first
 * exits at once (sooner, it is taken for a copy of the first). Scripts only:
 * under vitest (`VITEST` set) nothing is registered, since the runner ends its workers itself and
 * the tests' own clean-up stops their stacks. It acts whatever other listeners the signal has:
 * Playwright adds its own to every browser a script launches in its process, and those close
 * that browser and exit at once (pass {@link SCRIPT_HANDLES_SIGNALS} to such launches).
 * @returns a function that releases `stop` once it is no longer needed (the stack was stopped).
 */
export function stopOnSignal(stop: () => Promise<void>): () => void {
  if (process.env.VITEST) return () => undefined;
  if (!installed) {
    installed = true;
    for (const signal of STOPPING_SIGNALS) process.on(signal, () => onStoppingSignal(signal));
  }
  pending.add(stop);
  return () => pending.delete(stop);
}

/** Whether a stopping signal has come and the stop it began is under way: a script's errors from then on are the stop's, not failures. */
export function isStoppingOnSignal(): boolean {
  return stoppingSince !== undefined;
}

/**
 * Launch options for a browser a script starts in its own process (playwright-core) while a stack
 * runs: Playwright's own SIGINT, SIGTERM and SIGHUP handlers would close that browser and exit
 * before {@link stopOnSignal}'s stop has ended the stack, leaving the host's Chromium behind. The
 * browser still ends with the script (its pipe to the script closes).
 */
export const SCRIPT_HANDLES_SIGNALS = { handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false } as const;
