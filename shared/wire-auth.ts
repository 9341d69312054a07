import { base64url, jwtVerify, SignJWT } from 'jose';

/**
 * How the edge and a browser host authenticate each other on the wire (README "Security"), HS256
 * over a shared secret from configuration (`HOST_SHARED_SECRET`, at least 32 bytes). Nothing a
 * relay captures can be used again:
 *
 * 1. The edge opens the WebSocket with a fresh random nonce in the URL (`?nonce=`).
 * 2. The host's first frame, the hello, carries a token (`typ: wire-hello`, `aud: edge-wire`)
 *    that signs that nonce, the host id and a connection id the host chose for this connection.
 *    The edge accepts only a hello that signs the nonce it just sent, so a hello recorded on
 *    another connection is worthless.
 * 3. Every request frame is `<token>\n<body>`: the token (`typ: wire-frame`, `aud: host-wire`)
 *    names the connection id, the frame id, the method and the SHA-256 of the body text, and has
 *    a `jti`. The host checks the token, then the digest, and only then parses the body; it
 *    refuses a token of another connection, another frame or a `jti` it already saw.
 *
 * Tokens live {@link WIRE_TOKEN_TTL_S} seconds. Ceremony events (shared/authentication.ts) have
 * their own `typ` and audience, so none of the three can pass as another. No token carries or
 * reveals API bearer tokens.
 */

/** Lifetime of a wire token, in seconds. */
export const WIRE_TOKEN_TTL_S = 60;
/** Shortest accepted shared secret, in bytes. */
export const MIN_SHARED_SECRET_BYTES = 32;
/** Clock skew tolerated between edge and host, in seconds. */
const CLOCK_TOLERANCE_S = 5;
/** Longest token a frame may start with, in characters. */
export const MAX_WIRE_TOKEN_CHARS = 4096;

const HELLO = { typ: 'wire-hello', issuer: 'browser-host', audience: 'edge-wire' } as const;
const FRAME = { typ: 'wire-frame', issuer: 'edge', audience: 'host-wire' } as const;

/** A nonce or connection id: 32 random bytes, base64url (43 characters). */
export const WIRE_NONCE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

function keyOf(secret: string): Uint8Array {
  const key = new TextEncoder().encode(secret);
  if (key.byteLength < MIN_SHARED_SECRET_BYTES) {
    throw new Error(`HOST_SHARED_SECRET must be at least ${MIN_SHARED_SECRET_BYTES} bytes`);
  }
  return key;
}

/** A fresh nonce (or connection id): 32 random bytes, base64url. */
export function newWireNonce(): string {
  return base64url.encode(crypto.getRandomValues(new Uint8Array(32)));
}

/** SHA-256 of `text` (UTF-8), base64url. */
export async function wireDigest(text: string): Promise<string> {
  return base64url.encode(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))));
}

/** `url` with the edge's nonce as the `nonce` query parameter (how the edge opens a connection). */
export function withWireNonce(url: string, nonce: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('nonce', nonce);
  return parsed.href;
}

async function verifyTyped(secret: string, token: string, kind: typeof HELLO | typeof FRAME): Promise<Record<string, unknown> | undefined> {
  if (token.length > MAX_WIRE_TOKEN_CHARS) return undefined;
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), {
      issuer: kind.issuer,
      audience: kind.audience,
      algorithms: ['HS256'],
      clockTolerance: CLOCK_TOLERANCE_S,
      // A token must say when it was made and when it ends, and be no older than its lifetime.
      requiredClaims: ['iat', 'exp'],
      maxTokenAge: `${WIRE_TOKEN_TTL_S + CLOCK_TOLERANCE_S}s`,
    });
    return payload.typ === kind.typ ? payload : undefined;
  } catch {
    return undefined;
  }
}

/** What a host's hello says: who it is and the connection it named. */
export interface HostHelloClaims {
  readonly hostId: string;
  readonly connectionId: string;
}

/**
 * The host's hello token for one connection: signs the edge's `nonce`, the host id and the
 * connection id the host chose.
 * @throws Error when the secret is shorter than {@link MIN_SHARED_SECRET_BYTES}.
 */
export async function signHostHello(secret: string, claims: HostHelloClaims & { nonce: string }): Promise<string> {
  return new SignJWT({ typ: HELLO.typ, nonce: claims.nonce, host_id: claims.hostId, cid: claims.connectionId })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(HELLO.issuer)
    .setAudience(HELLO.audience)
    .setIssuedAt()
    .setExpirationTime(`${WIRE_TOKEN_TTL_S}s`)
    .sign(keyOf(secret));
}

/**
 * The hello's claims when `token` is a current host hello signed with `secret` for the nonce the
 * edge sent (`nonce`) and the host id the frame names; otherwise undefined. Never throws.
 */
export async function verifyHostHello(secret: string, token: string, expected: { nonce: string; hostId: string }): Promise<HostHelloClaims | undefined> {
  const payload = await verifyTyped(secret, token, HELLO);
  if (payload === undefined || payload.nonce !== expected.nonce || payload.host_id !== expected.hostId) return undefined;
  if (typeof payload.cid !== 'string' || !WIRE_NONCE_PATTERN.test(payload.cid)) return undefined;
  return { hostId: expected.hostId, connectionId: payload.cid };
}

/** What a frame token binds: the connection, the frame id, the method and the body's digest. */
export interface FrameTokenClaims {
  readonly connectionId: string;
  readonly frameId: number;
  readonly method: string;
  /** {@link wireDigest} of the body text. */
  readonly bodyDigest: string;
  /** The token's unique id. */
  readonly jti: string;
  /** Epoch seconds at which the token expires. */
  readonly exp: number;
}

/**
 * A request frame as sent: `<token>\n<body>`, the token binding `body` (JSON `{id, method,
 * params}`) to this connection, frame id and method.
 */
export async function signRequestFrame(secret: string, connectionId: string, body: { id: number; method: string; params: unknown }): Promise<string> {
  const text = JSON.stringify(body);
  const token = await new SignJWT({ typ: FRAME.typ, cid: connectionId, fid: body.id, method: body.method, bd: await wireDigest(text) })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(FRAME.issuer)
    .setAudience(FRAME.audience)
    .setJti(newWireNonce())
    .setIssuedAt()
    .setExpirationTime(`${WIRE_TOKEN_TTL_S}s`)
    .sign(keyOf(secret));
  return `${token}\n${text}`;
}

/** A request frame split at its first newline, looking at no more than the token's bound; undefined when it has no token part. */
export function splitRequestFrame(text: string): { token: string; body: string } | undefined {
  const newline = text.indexOf('\n');
  if (newline <= 0 || newline > MAX_WIRE_TOKEN_CHARS) return undefined;
  return { token: text.slice(0, newline), body: text.slice(newline + 1) };
}

/**
 * The claims of a current frame token signed with `secret` by the edge for a host, or undefined.
 * The caller still checks the connection id, the digest, the frame id, the method and the `jti`.
 * Never throws.
 */
export async function verifyFrameToken(secret: string, token: string): Promise<FrameTokenClaims | undefined> {
  const payload = await verifyTyped(secret, token, FRAME);
  if (payload === undefined) return undefined;
  const { cid, fid, method, bd, jti, exp } = payload;
  if (
    typeof cid !== 'string' ||
    typeof fid !== 'number' ||
    typeof method !== 'string' ||
    typeof bd !== 'string' ||
    typeof jti !== 'string' ||
    typeof exp !== 'number'
  ) {
    return undefined;
  }
  return { connectionId: cid, frameId: fid, method, bodyDigest: bd, jti, exp };
}
