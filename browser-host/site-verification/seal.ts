import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ProfileId } from '../../shared/protocol.ts';

/**
 * The account seal of a profile (ADR-0164 part 2: "bind account evidence to the sealed
 * profile"): per origin, the SHA-256 of the first account a verification saw in the profile.
 * Kept next to the profile's user-data directory, never inside it, so nothing a page or Chromium
 * writes can change it: `<profilesDir>/<profileId>.seal.json` (profile ids have no dots, so it
 * can never be another profile's directory).
 */
const SealFile = z.strictObject({
  origins: z.record(z.string(), z.strictObject({ account_sha256: z.string().regex(/^[0-9a-f]{64}$/), sealed_at_ms: z.int().min(0) })),
});
type SealFile = z.infer<typeof SealFile>;

/** What binding an account to the profile found. */
export type SealResult = 'sealed' | 'match' | 'mismatch' | 'unreadable';

/** The seal file of a profile. @throws Error for an id outside the profile alphabet. */
export function sealPath(profilesDir: string, profileId: string): string {
  if (!ProfileId.safeParse(profileId).success) throw new Error('not a profile id');
  return path.join(profilesDir, `${profileId}.seal.json`);
}

/**
 * Binds `accountSha256` to the profile for `origin`: the first account seen is written to the seal
 * (`sealed`); later the same account is a `match` and any other a `mismatch`. A seal file that
 * exists but cannot be read or parsed is `unreadable` (fail closed: nothing is overwritten).
 * Callers serialize calls per profile (the verification lock).
 */
export async function bindAccount(profilesDir: string, profileId: string, origin: string, accountSha256: string): Promise<SealResult> {
  const file = sealPath(profilesDir, profileId);
  let seal: SealFile = { origins: {} };
  try {
    const parsed = SealFile.safeParse(JSON.parse(await readFile(file, 'utf8')));
    if (!parsed.success) return 'unreadable';
    seal = parsed.data;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return 'unreadable';
  }
  const key = origin.toLowerCase();
  const sealed = seal.origins[key];
  if (sealed !== undefined) return sealed.account_sha256 === accountSha256 ? 'match' : 'mismatch';
  seal.origins[key] = { account_sha256: accountSha256, sealed_at_ms: Date.now() };
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(seal, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, file);
  return 'sealed';
}
