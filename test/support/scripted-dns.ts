import type { LookupAddress } from 'node:dns';

/**
 * A name server whose answers a test scripts per name, standing in for `node:dns/promises` so
 * the confinement's address checks run without a socket:
 * `vi.mock('node:dns/promises', () => import('../support/scripted-dns.ts'))`, then
 * `answers.set(name, [...])`. A name with no answer fails `ENOTFOUND`.
 */
export const answers = new Map<string, LookupAddress[]>();

/** `lookup` of `node:dns/promises` over {@link answers} (always all addresses, as the confinement asks). */
export async function lookup(name: string): Promise<LookupAddress[]> {
  const answer = answers.get(name);
  if (answer === undefined) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
  return answer;
}
