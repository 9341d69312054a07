/**
 * Bytes as the API and the wire carry them (base64) and as the edge names them (SHA-256 hex).
 * The edge never interprets these bytes: it only moves and measures them.
 */

/** Bytes per chunk turned into characters at once: `String.fromCharCode` takes arguments, and too many overflow the stack. */
const CHUNK_BYTES = 32 * 1024;

/** The bytes of standard base64 text (already checked as base64 by its zod schema). */
export function bytesOfBase64(base64: string): Uint8Array {
  return Uint8Array.from(atob(base64), (character) => character.charCodeAt(0));
}

/** Standard base64 of `bytes`, in chunks so a 2 MiB file does not overflow the stack. */
export function base64OfBytes(bytes: Uint8Array): string {
  let text = '';
  for (let start = 0; start < bytes.byteLength; start += CHUNK_BYTES) text += String.fromCharCode(...bytes.subarray(start, start + CHUNK_BYTES));
  return btoa(text);
}

/** The SHA-256 of `bytes`, lower-case hex (64 characters). */
export async function sha256OfBytes(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, '0')).join('');
}
