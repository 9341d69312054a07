import type { LiveViewNotification } from '../shared/live-view.ts';

/**
 * The connection a method was called on, for handlers that keep talking on it after answering
 * (live views: shared/live-view.ts). Notifications are `{method, params}` frames without an id.
 */
export interface WireConnection {
  /** Sends `notification`; false when the connection is closed or has more than 1 MiB queued unsent (nothing is sent then). */
  notify(notification: LiveViewNotification): boolean;
  /** Whether the connection is still open. */
  readonly open: boolean;
  /** Calls `listener` once when the connection closes (at once when it already has). */
  onClose(listener: () => void): void;
}
