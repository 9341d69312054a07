import type { CeremonyEventClaims, CeremonyOutcome, CeremonyState } from '../../shared/authentication.ts';
import type { HostParams, HostResult } from '../../shared/protocol.ts';
import type { Admission } from '../admission.ts';
import type { Deadline } from '../deadline.ts';
import type { SignInWindow } from '../egress/confinement.ts';
import type { LeaseTable } from '../lease.ts';
import type { ProfileBrowser } from '../profile-browser.ts';
import type { SiteCatalog } from '../site-verification/catalog.ts';
import type { SessionVerifier } from '../site-verification/verify.ts';

// The shapes every part of a sign-in ceremony shares: the record Ceremonies (ceremonies.ts) keeps
// for each one, the person's window (window.ts) and the verifications (polling.ts).

export type BeginParams = HostParams<'ceremony.begin'>;
export type CeremonyAnswer = HostResult<'ceremony.begin'>;

/** What ceremonies work with. */
export interface CeremonyServices {
  readonly hostId: string;
  /** Signs the outcome events (the wire's shared secret). */
  readonly sharedSecret: string;
  /** Base URL of the edge for event callbacks; undefined: no callbacks. */
  readonly edgeUrl: string | undefined;
  /** Spacing of surface polls, in ms. */
  readonly pollMs: number;
  /** How long a begin waits to hold the profile, in ms. */
  readonly admissionWaitMs: number;
  readonly admission: Admission;
  readonly leases: LeaseTable;
  readonly verifier: SessionVerifier;
  readonly catalog: SiteCatalog;
  /** Called once when a ceremony gets its final outcome (its live views end with it). */
  readonly onFinished?: (ceremonyId: string, outcome: CeremonyOutcome) => void;
  /** Called with a sentence for the person when their sign-in window refused something (its live views show it). */
  readonly onNotice?: (ceremonyId: string, sentence: string) => void;
}

/** One ceremony, from `begin` on; final once `claims` is set. */
export interface Ceremony {
  readonly params: BeginParams;
  state: CeremonyState;
  /** The outcome event's claims, set once when the ceremony reaches a final outcome. */
  claims: CeremonyEventClaims | undefined;
  /** Ends at `timeout_ms`; disposed (aborting everything under it) when the ceremony ends. */
  readonly life: Deadline;
  /** The browser admission gave this ceremony, while it holds the profile. */
  hold: ProfileBrowser | undefined;
  /** How the latest verification was made. */
  method: 'definition' | 'differential' | 'none';
  /** The surface URL last verified, and when (epoch ms). */
  checkedUrl: string | undefined;
  checkedAt: number;
  /** The wait before the same page is verified again, in ms (see polling.ts `RECHECK_MS`). */
  recheckMs: number;
  /** The polling loop, once started. */
  loop: Promise<void> | undefined;
  /** The person's sign-in window's hooks (window.ts `openSignInWindow`), once shown. */
  window: SignInWindow | undefined;
  /**
   * Origins of the top-level documents the person's window loaded, in order, a repeat of the one
   * before folded, the newest `MAX_VISITED_ORIGINS` (shared/authentication.ts).
   */
  readonly visited: string[];
  /** The sentences told to the person (each once), the newest few, for a live view opened later. */
  readonly notices: string[];
  /** Tells the person a sentence through the ceremony's live views. */
  readonly notify: (sentence: string) => void;
}
