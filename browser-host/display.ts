import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { Deadline } from './deadline.ts';
import { HostError } from './host-error.ts';

/** A virtual X display the host started for headed Chromium on a machine without one. */
export interface VirtualDisplay {
  /** The `DISPLAY` value, e.g. `:99`. */
  readonly name: string;
  /** Process id of the Xvfb server. */
  readonly pid: number;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. Idempotent. */
  close(): Promise<void>;
}

/** Screen of the virtual display: width x height x depth. */
const SCREEN = '1280x800x24';
/** How long Xvfb gets to exit after SIGTERM, in ms, before it is killed. */
const EXIT_GRACE_MS = 5_000;

/**
 * Starts `Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp` and reads the display number
 * Xvfb picks (the first free one) from file descriptor 3, so concurrent hosts never collide.
 * @throws HostError('host_unavailable') when Xvfb cannot start or does not report a display
 *   before the deadline; the process is killed in that case.
 */
export async function startVirtualDisplay(deadline: Deadline, xvfbPath = 'Xvfb'): Promise<VirtualDisplay> {
  const child = spawn(xvfbPath, ['-displayfd', '3', '-screen', '0', SCREEN, '-nolisten', 'tcp'], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  try {
    const number = await deadline.race(readDisplayNumber(child), 'host_unavailable', 'Xvfb did not report a display in time');
    const pid = child.pid;
    if (pid === undefined) throw new HostError('host_unavailable', 'Xvfb has no process id');
    let closing: Promise<void> | undefined;
    return {
      name: `:${number}`,
      pid,
      close: () => (closing ??= stop(child, exited)),
    };
  } catch (error) {
    await stop(child, exited);
    throw error;
  }
}

function readDisplayNumber(child: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const fd3 = child.stdio[3] as Readable | null;
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2_000);
    });
    child.once('error', (error) => reject(new HostError('host_unavailable', `Xvfb could not start: ${error.message}`)));
    child.once('exit', (code, signal) =>
      reject(new HostError('host_unavailable', `Xvfb exited (${signal ?? code}) before reporting a display: ${stderr.trim()}`)),
    );
    let buffered = '';
    fd3?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const line = buffered.split('\n', 1)[0];
      if (buffered.includes('\n') && line !== undefined && /^\d+$/.test(line.trim())) resolve(line.trim());
    });
  });
}

async function stop(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const grace = Deadline.after(EXIT_GRACE_MS);
  try {
    await grace.race(exited);
  } catch {
    child.kill('SIGKILL');
    await exited;
  } finally {
    grace.dispose();
  }
}
