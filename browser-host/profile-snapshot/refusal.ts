/**
 * A snapshot that cannot be restored, and why in words (shared/fleet.ts `RefusedSnapshot`): the
 * edge did not serve it, its size or digest is not the grant's, its seal does not open, or its
 * archive is damaged. The restore path catches it, reports the reason, and tries the next older
 * snapshot; any other error is a fault of the host itself.
 */
export class SnapshotRefusal extends Error {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, options);
    this.name = 'SnapshotRefusal';
  }
}

/** Longest refusal reason reported (shared/fleet.ts `RefusedSnapshot.reason`), in characters. */
export const MAX_REASON_CHARS = 300;

/** `reason` bounded to {@link MAX_REASON_CHARS}, on one line. */
export function boundedReason(reason: string): string {
  const line = reason.replace(/\s+/g, ' ').trim();
  return line.length > MAX_REASON_CHARS ? `${line.slice(0, MAX_REASON_CHARS - 1)}…` : line;
}
