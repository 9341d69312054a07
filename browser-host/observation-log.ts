/** How many recent capture times {@link ObservationLog} keeps. */
export const RECENT_OBSERVATIONS = 64;

/**
 * Counts the fresh captures the host served for plain `page.observe` commands, and keeps the
 * epoch-ms times their commands arrived, for the last {@link RECENT_OBSERVATIONS}. Operators read it through
 * `host.status`; it is also how tests check, on the host's side, that the edge's condition
 * reads stay bounded in number and spacing (ADR-0159: at most 20 reads, at least 250 ms apart).
 */
export class ObservationLog {
  private served = 0;
  private readonly recent: number[] = [];

  /** Notes one capture served for a command received at `atMs` (epoch ms). */
  record(atMs: number): void {
    this.served++;
    this.recent.push(atMs);
    if (this.recent.length > RECENT_OBSERVATIONS) this.recent.shift();
  }

  /** `{observations_served, recent_observations_ms}` as `host.status` reports them. */
  view(): { observations_served: number; recent_observations_ms: number[] } {
    return { observations_served: this.served, recent_observations_ms: [...this.recent] };
  }
}
