import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { HostError } from './host-error.ts';

/** Where a continuation resumes: the lease it was issued to, the revision and the first line. */
export interface CursorPosition {
  readonly leaseId: string;
  readonly revision: number;
  readonly start: number;
}

const Payload = z.strictObject({ l: z.string().max(80), r: z.int().min(0), s: z.int().min(0) });

/** Bytes of HMAC-SHA256 kept in a cursor: 128 bits is plenty against forgery. */
const MAC_BYTES = 16;

/**
 * Continuation cursors: `base64url(JSON {l: lease_id, r: revision, s: start})` + `.` +
 * `base64url(HMAC-SHA256(secret, "cursor.v1." + payload))` truncated to 16 bytes, so a cursor the
 * host did not issue, or one issued to another lease, is detected. Cursors carry no page text.
 */
export class ContinuationCursors {
  readonly #secret: string;

  constructor(secret: string) {
    this.#secret = secret;
  }

  /** The cursor for `position`; about 100-150 characters, well under the contract's 512. */
  seal(position: CursorPosition): string {
    const payload = Buffer.from(JSON.stringify({ l: position.leaseId, r: position.revision, s: position.start })).toString('base64url');
    return `${payload}.${this.#mac(payload).toString('base64url')}`;
  }

  /**
   * The position inside a cursor this host sealed.
   * @throws HostError('invalid_params') when the cursor is undecodable or its MAC does not verify.
   */
  open(cursor: string): CursorPosition {
    const [payload, mac, extra] = cursor.split('.');
    const forged = new HostError('invalid_params', 'continuation: not a cursor this host issued');
    if (payload === undefined || mac === undefined || extra !== undefined) throw forged;
    const expected = this.#mac(payload);
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw forged;
    let decoded: unknown;
    try {
      decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw forged;
    }
    const parsed = Payload.safeParse(decoded);
    if (!parsed.success) throw forged;
    return { leaseId: parsed.data.l, revision: parsed.data.r, start: parsed.data.s };
  }

  #mac(payload: string): Buffer {
    return createHmac('sha256', this.#secret).update(`cursor.v1.${payload}`).digest().subarray(0, MAC_BYTES);
  }
}
