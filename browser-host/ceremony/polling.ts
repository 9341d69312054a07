import type { CeremonyOutcome } from '../../shared/authentication.ts';
import type { Deadline } from '../deadline.ts';
import type { ProfileBrowser } from '../profile-browser.ts';
import type { SessionVerifier, VerificationResult } from '../site-verification/verify.ts';
import type { Ceremony, CeremonyServices } from './record.ts';
import { holdSurface, readSurface } from './window.ts';

// When a ceremony's session is verified: once at `begin` (by Ceremonies), then whenever polling
// finds the person past the sign-in page, with doubling waits while the same page stays inconclusive.

/** Longest one verification during polling may take, in ms. */
const VERIFY_MS = 30_000;
/**
 * A surface already verified without an outcome is verified again after this long, in ms, doubling
 * each time the same page stays inconclusive (each verification may launch a control browser).
 */
export const RECHECK_MS = 5_000;
/** The longest wait between verifications of the same page, in ms. */
const MAX_RECHECK_MS = 60_000;

/** Gives a ceremony its final outcome (Ceremonies' `#finish`). */
export type FinishCeremony = (record: Ceremony, outcome: CeremonyOutcome, result?: VerificationResult) => void;

/** One verification within `ms` of the ceremony's time; undefined when it could not be made. */
export async function verifyCeremony(
  record: Ceremony,
  browser: ProfileBrowser,
  verifier: SessionVerifier,
  ms: number,
): Promise<VerificationResult | undefined> {
  const deadline = record.life.child(ms);
  try {
    const result = await verifier.verify(deadline, browser, record.params.origin, record.params.protected_url);
    record.method = result.method;
    return result;
  } catch (error) {
    process.stderr.write(
      `browser-host: ceremony ${record.params.ceremony_id}: no verification this time: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return undefined;
  } finally {
    deadline.dispose();
  }
}

/** Polls the person's surface every `pollMs` until a final outcome, which it gives with `finish`; never throws. */
export async function pollCeremony(record: Ceremony, services: CeremonyServices, finish: FinishCeremony): Promise<void> {
  const { pollMs } = services;
  while (record.claims === undefined) {
    await pause(record.life, pollMs);
    if (record.claims !== undefined) return;
    if (record.life.expired) {
      finish(record, 'not_verified');
      return;
    }
    const browser = await holdSurface(record, services.admission, services.admissionWaitMs);
    if (browser === undefined || record.claims !== undefined) continue;
    const surface = await readSurface(record, browser, services.catalog);
    if (surface === undefined) continue;
    if (surface.url === record.checkedUrl && Date.now() - record.checkedAt < record.recheckMs) continue;
    record.recheckMs = surface.url === record.checkedUrl ? Math.min(record.recheckMs * 2, MAX_RECHECK_MS) : RECHECK_MS;
    record.checkedUrl = surface.url;
    record.checkedAt = Date.now();
    if (record.state === 'awaiting_person') record.state = 'verifying';
    const result = await verifyCeremony(record, browser, services.verifier, VERIFY_MS);
    if (record.claims !== undefined) return;
    if (result?.outcome === 'verified' || result?.outcome === 'account_mismatch') {
      finish(record, result.outcome, result);
      return;
    }
    if (result?.outcome === 'challenge') record.state = 'challenge';
    else if (record.state === 'verifying' || result !== undefined) record.state = 'awaiting_person';
  }
}

/** Waits `ms`, or less when `life` ends first. */
async function pause(life: Deadline, ms: number): Promise<void> {
  const wait = life.child(ms);
  try {
    await new Promise<void>((resolve) => {
      if (wait.signal.aborted) resolve();
      else wait.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    wait.dispose();
  }
}
