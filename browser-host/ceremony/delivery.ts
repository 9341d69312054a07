import { type CeremonyEventClaims, type CeremonyEventDelivery, signCeremonyEvent } from '../../shared/authentication.ts';
import { Deadline } from '../deadline.ts';

/** Delays before each delivery attempt, in ms: at most three attempts. */
export const DELIVERY_BACKOFF_MS: readonly number[] = [0, 500, 1_500];
/** Longest one delivery attempt may take, in ms. */
const ATTEMPT_MS = 5_000;

/** The edge's endpoint for ceremony events under its base URL. */
export function ceremonyEventsUrl(edgeUrl: string): string {
  return `${edgeUrl.replace(/\/+$/, '')}/v1/host/ceremony-events`;
}

/**
 * Delivers one ceremony outcome to the edge: POST `{event}` (JSON, shared/authentication.ts
 * `CeremonyEventDelivery`, the token signed once with `secret`) to
 * `<edgeUrl>/v1/host/ceremony-events`, at most three attempts (after 0, 500 and 1,500 ms), 5 s
 * each. A 2xx answer ends it; so does a 4xx other than 408 and 429 (resending the same event
 * cannot change the answer). Stops when `stop` fires. Never throws: a missed delivery is left to
 * the edge's reconciliation, which asks `ceremony.status`.
 */
export async function deliverCeremonyEvent(edgeUrl: string, secret: string, claims: CeremonyEventClaims, stop: AbortSignal): Promise<void> {
  try {
    const body: CeremonyEventDelivery = { event: await signCeremonyEvent(secret, claims) };
    for (const delayMs of DELIVERY_BACKOFF_MS) {
      if (!(await Deadline.pause(delayMs, stop))) return;
      const attempt = Deadline.after(ATTEMPT_MS);
      try {
        const response = await fetch(ceremonyEventsUrl(edgeUrl), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.any([attempt.signal, stop]),
        });
        await response.body?.cancel().catch(() => {});
        if (response.ok) return;
        if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) return;
      } catch {
        // Unreachable, reset or too slow: try again after the next delay.
      } finally {
        attempt.dispose();
      }
    }
  } catch {
    // Never throws (signing cannot fail with a valid secret; this is belt and braces).
  }
}
