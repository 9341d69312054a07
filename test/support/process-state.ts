import { readFileSync } from 'node:fs';

/**
 * The state letter of process `pid` from /proc/<pid>/stat (`R` running, `S` sleeping, `T`
 * stopped, `Z` a zombie: ended, not yet reaped), or undefined when there is no such process.
 */
export function processStateOf(pid: number): string | undefined {
  try {
    // The command name, in parentheses, may itself hold spaces and ')': the state follows the last ') '.
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1)?.[0];
  } catch {
    return undefined;
  }
}

/** Ends process `pid` with SIGKILL; nothing when it has ended already. */
export function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // ended already
  }
}
