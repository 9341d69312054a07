/** What {@link until} rejects with when its time is up. */
export class UntilTimedOut extends Error {}

/**
 * Polls `read` every `intervalMs` until it gives a value other than `undefined` or `false`, and
 * resolves with that value. Bounded: after `timeoutMs` it rejects with an error naming `what` it
 * waited for (a function is asked only then, so it can tell the last state it saw).
 *
 * No Node imports: the edge tests (inside workerd) use it too.
 */
export async function until<T>(
  read: () => T | undefined | false | Promise<T | undefined | false>,
  what: string | (() => string),
  timeoutMs = 15_000,
  intervalMs = 50,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new UntilTimedOut(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
