import { DomainError } from '../domain-error.ts';

/**
 * The cursor of `GET /v1/runs` (issue 32): the position of the last run of a page, its creation
 * time and id, which order the list (newest first, the id breaking ties), so the next page starts
 * strictly after it and neither repeats nor skips a run. Opaque to clients: base64url of
 * `<created_at ms>.<id>`.
 */
export interface RunPosition {
  /** Epoch ms. */
  readonly createdAt: number;
  readonly id: string;
}

const POSITION = /^(0|[1-9][0-9]{0,15})\.([A-Za-z0-9_-]{1,64})$/;

/** The opaque cursor of `position`. */
export function encodeRunCursor(position: RunPosition): string {
  return btoa(`${position.createdAt}.${position.id}`).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * The position a cursor of {@link encodeRunCursor} names.
 * @throws DomainError('invalid_cursor') for anything else: not base64url, not a position, or not
 *   in the one spelling the edge writes.
 */
export function decodeRunCursor(cursor: string): RunPosition {
  const refused = new DomainError(
    'invalid_cursor',
    "cursor: not a cursor this edge made; pass a page's next_cursor as it was given, or none for the first page",
  );
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) throw refused;
  let text: string;
  try {
    text = atob(cursor.replace(/-/g, '+').replace(/_/g, '/'));
  } catch {
    throw refused;
  }
  const match = POSITION.exec(text);
  if (!match) throw refused;
  const position = { createdAt: Number(match[1]), id: match[2]! };
  if (!Number.isSafeInteger(position.createdAt) || encodeRunCursor(position) !== cursor) throw refused;
  return position;
}
