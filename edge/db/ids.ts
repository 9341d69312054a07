/**
 * A new identifier: `prefix_` followed by 20 random base32 characters (100 bits), e.g.
 * `run_k3v9...`. Prefixes say what a thing is: run, call, apr, msg, eff, prn, grt (grant),
 * sch (schedule), pol (policy profile version), sie (sign-in episode), siw (sign-in wait), ntc
 * (notice), cer (ceremony), whd (webhook delivery), art (artifact), rcp (recipe version), rce
 * (recipe event), rdr (recipe driver), hst (browser host), file (a file attached to a run), mem
 * (an owner's memory), sug (a memory an agent suggested), mev (memory evidence), apd (anticipation
 * prediction).
 */
export function newId(
  prefix:
    | 'adm'
    | 'run'
    | 'call'
    | 'apr'
    | 'msg'
    | 'eff'
    | 'prn'
    | 'grt'
    | 'sch'
    | 'pol'
    | 'sie'
    | 'siw'
    | 'ntc'
    | 'cer'
    | 'whd'
    | 'art'
    | 'rcp'
    | 'rce'
    | 'rdr'
    | 'hst'
    | 'file'
    | 'mem'
    | 'sug'
    | 'mev'
    | 'apd',
): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  const bytes = crypto.getRandomValues(new Uint8Array(20));
  let out = '';
  for (const byte of bytes) out += alphabet[byte & 31];
  return `${prefix}_${out}`;
}
