/**
 * SHA-256 hex digest of a value's canonical JSON (object keys sorted, no whitespace), so equal
 * values always hash equal. Used for policy profile hashes and arguments hashes that approvals
 * bind to (DESIGN.md section 5).
 */
export async function canonicalHash(value: unknown): Promise<string> {
  return sha256Hex(canonicalJson(value));
}

/** Canonical JSON: keys sorted at every depth; `undefined` members dropped as JSON does. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return inner;
    return Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/** SHA-256 hex digest of a UTF-8 string (WebCrypto, available on Workers, Deno and Node). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, '0')).join('');
}
