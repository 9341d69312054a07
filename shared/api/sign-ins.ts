import { z } from 'zod';
import { SignInReason } from '../authentication.ts';
import { RunProfileId } from './runs.ts';

// Sign-in episodes, owner notices, ceremony receipts and profile bindings.
// Part of the agent-facing HTTP API v1: shared/api.ts re-exports every resource's file.

/** States of a sign-in episode (DESIGN.md section 8). */
export const SignInEpisodeState = z.enum(['open', 'resolved', 'abandoned', 'revoked']);

export type SignInEpisodeState = z.infer<typeof SignInEpisodeState>;

/** States of an owner's profile binding (ADR-0164 part 3). */
export const ProfileBindingState = z.enum(['active', 'revoked']);

export type ProfileBindingState = z.infer<typeof ProfileBindingState>;

/** A sign-in episode as the owner sees it: one per owner, profile and origin while open. */
export const SignInView = z.strictObject({
  id: z.string(),
  profile_id: z.string(),
  origin: z.string(),
  state: SignInEpisodeState,
  generation: z.int().min(1),
  question: z.string(),
  /** The host's last reported ceremony state, e.g. `awaiting_person` or `challenge`; null before the host answered. */
  ceremony_state: z.string().nullable(),
  /** Runs parked on it now. */
  waiting_runs: z.array(z.string()),
  /** Why the newest wait's page was taken for a sign-in wall (issue 17); empty when no run waits. */
  reasons: z.array(SignInReason),
  /**
   * Where the person's window went during the current ceremony's sign-in (DESIGN.md section 18),
   * as its host reported with the outcome: origins only, in order; empty before an outcome.
   */
  visited_origins: z.array(z.string()),
  opened_at: z.string(),
  resolved_at: z.string().nullable(),
});

export type SignInView = z.infer<typeof SignInView>;

export const SignInList = z.strictObject({ sign_ins: z.array(SignInView) });

export type SignInList = z.infer<typeof SignInList>;

export const SignInListQuery = z.strictObject({ state: SignInEpisodeState.optional().meta({ examples: ['open'] }) });

/** An owner notice: exactly one per unresolved sign-in episode. */
export const NoticeView = z.strictObject({
  id: z.string(),
  kind: z.literal('sign_in_required'),
  episode_id: z.string(),
  run_id: z.string(),
  text: z.string(),
  created_at: z.string(),
  resolved_at: z.string().nullable(),
});

export type NoticeView = z.infer<typeof NoticeView>;

export const NoticeList = z.strictObject({ notices: z.array(NoticeView) });

export type NoticeList = z.infer<typeof NoticeList>;

/** What the edge answers a host's ceremony event delivery. */
export const CeremonyEventReceipt = z.strictObject({
  event_id: z.string(),
  outcome: z.string(),
  /** True only for the delivery that resolved the episode; a replay or a fenced event is false. */
  applied: z.boolean(),
  /** Runs this delivery requeued. */
  resumed_runs: z.array(z.string()),
});

export type CeremonyEventReceipt = z.infer<typeof CeremonyEventReceipt>;

/** A profile binding after revocation. */
export const ProfileBindingView = z.strictObject({
  profile_id: z.string(),
  state: ProfileBindingState,
  revoked_at: z.string().nullable(),
  /** Runs whose sign-in waits the revocation fenced (they end `failed`). */
  fenced_runs: z.array(z.string()),
});

export type ProfileBindingView = z.infer<typeof ProfileBindingView>;

/** A profile id in a path. */
export const ProfileParam = z.strictObject({ profile_id: RunProfileId.meta({ examples: ['old-laptop'] }) });
