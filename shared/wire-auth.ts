import { jwtVerify, SignJWT } from 'jose';

/**
 * Short-lived tokens with which the edge and a browser host authenticate each other over the
 * wire. HS256 over a shared secret from configuration (`HOST_SHARED_SECRET`, at least 32 bytes).
 * The edge signs every request frame (`iss: edge`, `aud: browser-host`); the host signs its hello
 * (`iss: browser-host`, `aud: edge`). Neither token carries or reveals API bearer tokens.
 */
export type WireParty = 'edge' | 'browser-host';

/** Lifetime of a wire token, in seconds. */
export const WIRE_TOKEN_TTL_S = 60;
/** Shortest accepted shared secret, in bytes. */
export const MIN_SHARED_SECRET_BYTES = 32;

function keyOf(secret: string): Uint8Array {
  const key = new TextEncoder().encode(secret);
  if (key.byteLength < MIN_SHARED_SECRET_BYTES) {
    throw new Error(`HOST_SHARED_SECRET must be at least ${MIN_SHARED_SECRET_BYTES} bytes`);
  }
  return key;
}

/**
 * Signs a token from `from` to `to`, valid for {@link WIRE_TOKEN_TTL_S} seconds.
 * @throws Error when the secret is shorter than {@link MIN_SHARED_SECRET_BYTES}.
 */
export async function signWireToken(secret: string, from: WireParty, to: WireParty): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(from)
    .setAudience(to)
    .setIssuedAt()
    .setExpirationTime(`${WIRE_TOKEN_TTL_S}s`)
    .sign(keyOf(secret));
}

/**
 * True when `token` was signed with `secret` by `from` for `to`, carries `iat` and `exp`, has
 * not expired and is no older than {@link WIRE_TOKEN_TTL_S} (5 s clock tolerance). Never throws
 * for a bad token; it answers false.
 */
export async function verifyWireToken(secret: string, token: string, from: WireParty, to: WireParty): Promise<boolean> {
  try {
    await jwtVerify(token, keyOf(secret), {
      issuer: from,
      audience: to,
      algorithms: ['HS256'],
      clockTolerance: 5,
      // A token must say when it was made and when it ends, and be no older than its lifetime.
      requiredClaims: ['iat', 'exp'],
      maxTokenAge: `${WIRE_TOKEN_TTL_S + 5}s`,
    });
    return true;
  } catch {
    return false;
  }
}
