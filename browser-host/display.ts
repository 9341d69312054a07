import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Deadline } from './deadline.ts';
import { HostError } from './host-error.ts';

/** A virtual X display the host started for headed Chromium on a machine without one. */
export interface VirtualDisplay {
  /** The `DISPLAY` value, e.g. `:99`. */
  readonly name: string;
  /** Process id of the Xvfb server. */
  readonly pid: number;
  /**
   * The authority file (`XAUTHORITY`) holding the display's one MIT-MAGIC-COOKIE-1, readable by
   * the host's user only: without it, no other process can connect to the display (read the
   * sign-in window, type into it).
   */
  readonly authority: string;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s), waits for it to exit and deletes the authority file. Idempotent. */
  close(): Promise<void>;
}

/** Screen of the virtual display: width x height x depth. */
const SCREEN = '1280x800x24';
/** How long Xvfb gets to exit after SIGTERM, in ms, before it is killed. */
const EXIT_GRACE_MS = 5_000;

/**
 * One Xauthority entry (the libXau file format: big-endian lengths): family Wild, no address and
 * no display number, so it matches this display whatever number Xvfb picks.
 */
export function authorityEntry(cookie: Buffer): Buffer {
  const field = (data: Buffer): Buffer => Buffer.concat([Buffer.from([data.length >> 8, data.length & 0xff]), data]);
  return Buffer.concat([Buffer.from([0xff, 0xff]), field(Buffer.alloc(0)), field(Buffer.alloc(0)), field(Buffer.from(AUTH_PROTOCOL)), field(cookie)]);
}

/** The X authorization protocol the display requires. */
export const AUTH_PROTOCOL = 'MIT-MAGIC-COOKIE-1';

/**
 * Starts `Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp -auth <file>` and reads the display
 * number Xvfb picks (the first free one) from file descriptor 3, so concurrent hosts never collide.
 * The authority file holds a fresh random 16-byte cookie, in a directory of its own (mode 0700,
 * the file 0600): only the host's user can connect.
 * @throws HostError('host_unavailable') when Xvfb cannot start or does not report a display
 *   before the deadline; the process is killed and the file deleted in that case.
 */
export async function startVirtualDisplay(deadline: Deadline, xvfbPath = 'Xvfb'): Promise<VirtualDisplay> {
  const directory = await mkdtemp(path.join(tmpdir(), 'browser-host-x-'));
  const authority = path.join(directory, 'Xauthority');
  await writeFile(authority, authorityEntry(randomBytes(16)), { mode: 0o600 });
  const removeAuthority = (): Promise<void> => rm(directory, { recursive: true, force: true });
  const child = spawn(xvfbPath, ['-displayfd', '3', '-screen', '0', SCREEN, '-nolisten', 'tcp', '-auth', authority], {
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
      authority,
      close: () => (closing ??= stop(child, exited).then(removeAuthority)),
    };
  } catch (error) {
    await stop(child, exited);
    await removeAuthority();
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
  if (
    (await Deadline.waitAtMost(
      EXIT_GRACE_MS,
      exited.then(() => true),
    )) === true
  )
    return;
  child.kill('SIGKILL');
  await exited;
}
