import type { RunRow } from '../db/schema.ts';
import { HOST_CONNECT_MS } from '../deadline.ts';
import type { HostSession } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';

/**
 * The first connection attempt to the host holding a run's lease, started before the call's
 * record is written (issue 35), so the WebSocket upgrade and the host's signed hello overlap that
 * write instead of following it. Nothing is sent on the session until the dispatch takes it, which
 * it does only after the record (DESIGN.md section 4: recorded before anything is sent). Only a
 * run whose lease host is on record is dialled: finding a profile's host otherwise reads and may
 * write the database, which waits for the record as before.
 */
export interface EarlyConnection {
  /** The host dialled: the run's lease host when the attempt began. */
  readonly host: { readonly id: string; readonly url: string };
  /**
   * The attempt's outcome, once: the authenticated session, or the error it failed with (the
   * dispatch counts it as its first connection attempt: see fleet/host-connection.ts `reach`).
   * Undefined when it was already taken or discarded.
   */
  take(): Promise<{ readonly session: HostSession } | { readonly error: unknown }> | undefined;
  /** Closes the session unless it was taken (the call was refused, or went elsewhere). Idempotent. */
  discard(): void;
}

/**
 * Starts {@link EarlyConnection} to `run`'s lease host, or answers undefined when none is on
 * record. Never rejects: a failed attempt is an outcome the dispatch reads.
 */
export function dialEarly(ports: Ports, run: RunRow): EarlyConnection | undefined {
  if (run.leaseHostId === null || run.leaseHostUrl === null) return undefined;
  const opening: Promise<{ readonly session: HostSession } | { readonly error: unknown }> = ports
    .dial(run.leaseHostUrl)
    .connect(HOST_CONNECT_MS)
    .then(
      (session) => ({ session }),
      (error: unknown) => ({ error }),
    );
  let state: 'open' | 'taken' | 'discarded' = 'open';
  return {
    host: { id: run.leaseHostId, url: run.leaseHostUrl },
    take() {
      if (state !== 'open') return undefined;
      state = 'taken';
      return opening;
    },
    discard() {
      if (state !== 'open') return;
      state = 'discarded';
      void opening.then((opened) => {
        if ('session' in opened) opened.session.close();
      });
    },
  };
}
