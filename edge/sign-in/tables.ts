import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { SignInEpisodeState } from '../../shared/api.ts';
import type { SignInReason } from '../../shared/authentication.ts';
import { valuesOf } from '../db/enum-values.ts';
import { runs } from '../runs/tables.ts';

// Sign-in episodes, the runs that wait on them, the owner notices, the ceremony events and live views.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

/**
 * One sign-in episode: an owner's profile needs sign-in at an origin. Repeated detections (other
 * runs, other calls) join the open episode: at most one open episode per owner, profile and
 * origin (a partial unique index). `generation` counts ceremonies for that owner, profile and
 * origin across episodes; only an event of the episode's current generation and ceremony resolves it.
 */
export const signInEpisodes = sqliteTable(
  'sign_in_episodes',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    profileId: text('profile_id').notNull(),
    hostProfileId: text('host_profile_id').notNull(),
    origin: text('origin').notNull(),
    generation: integer('generation').notNull(),
    ceremonyId: text('ceremony_id').notNull().unique(),
    state: text('state', { enum: valuesOf(SignInEpisodeState) }).notNull(),
    /** What the owner is asked, e.g. "Sign in to http://… in the browser of profile me". */
    question: text('question').notNull(),
    /** Where the person signs in and which page proves it (given to the host's ceremony). */
    signInUrl: text('sign_in_url').notNull(),
    protectedUrl: text('protected_url').notNull(),
    /** The host's last reported ceremony state (awaiting_person, challenge, …), for display. */
    ceremonyState: text('ceremony_state'),
    resolvedBy: text('resolved_by'),
    openedAt: integer('opened_at').notNull(),
    resolvedAt: integer('resolved_at'),
    /** When the maintenance pass last asked the host about it (epoch ms); it takes the least recently checked first. */
    checkedAt: integer('checked_at'),
  },
  (t) => [
    uniqueIndex('sign_in_episodes_one_open').on(t.ownerId, t.profileId, t.origin).where(sql`state = 'open'`),
    index('sign_in_episodes_state_idx').on(t.state),
  ],
);

/** A run parked on a sign-in episode (run, trusted profile binding, question, generation). */
export const signInWaits = sqliteTable(
  'sign_in_waits',
  {
    id: text('id').primaryKey(),
    runId: text('run_id')
      .notNull()
      .references(() => runs.id),
    episodeId: text('episode_id')
      .notNull()
      .references(() => signInEpisodes.id),
    ownerId: text('owner_id').notNull(),
    hostProfileId: text('host_profile_id').notNull(),
    origin: text('origin').notNull(),
    question: text('question').notNull(),
    /** The episode's ceremony generation when the run parked. */
    generation: integer('generation').notNull(),
    /** The call whose answer showed the sign-in wall. */
    toolCallId: text('tool_call_id').notNull(),
    /** Why the host took the page for a sign-in wall (issue 17): the evidence, for the owner to read. */
    reasons: text('reasons', { mode: 'json' }).$type<SignInReason[]>().notNull().default(sql`'[]'`),
    state: text('state', { enum: ['pending', 'resolved', 'fenced'] }).notNull(),
    /** Why a fenced wait will not continue: cancelled, deadline_exceeded, profile_revoked, run_ended. */
    fenceReason: text('fence_reason'),
    resolvedBy: text('resolved_by'),
    createdAt: integer('created_at').notNull(),
    endedAt: integer('ended_at'),
  },
  (t) => [
    uniqueIndex('sign_in_waits_one_pending_per_run').on(t.runId).where(sql`state = 'pending'`),
    index('sign_in_waits_episode_idx').on(t.episodeId, t.state),
  ],
);

/** Owner notices: exactly one per sign-in episode (a unique episode id). */
export const notices = sqliteTable(
  'notices',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    kind: text('kind', { enum: ['sign_in_required'] }).notNull(),
    episodeId: text('episode_id')
      .notNull()
      .unique()
      .references(() => signInEpisodes.id),
    /** The run whose detection opened the episode. */
    runId: text('run_id').notNull(),
    text: text('text').notNull(),
    createdAt: integer('created_at').notNull(),
    resolvedAt: integer('resolved_at'),
  },
  (t) => [index('notices_owner_idx').on(t.ownerId, t.createdAt)],
);

/**
 * Ceremony outcome events as the host signed them, recorded durably before anything they change;
 * the host's stable event id makes a replay a no-op.
 */
export const ceremonyEvents = sqliteTable(
  'ceremony_events',
  {
    eventId: text('event_id').primaryKey(),
    ceremonyId: text('ceremony_id').notNull(),
    hostId: text('host_id').notNull(),
    hostProfileId: text('host_profile_id').notNull(),
    origin: text('origin').notNull(),
    generation: integer('generation').notNull(),
    outcome: text('outcome').notNull(),
    method: text('method').notNull(),
    accountSha256: text('account_sha256'),
    /** Where the person's window went (the event's `visited_origins`: origins only, in order); null when the host did not say. */
    visitedOrigins: text('visited_origins', { mode: 'json' }).$type<string[]>(),
    decidedAt: integer('decided_at').notNull(),
    receivedAt: integer('received_at').notNull(),
    via: text('via', { enum: ['callback', 'reconciliation', 'begin'] }).notNull(),
    /** True when this event resolved its episode. */
    applied: integer('applied', { mode: 'boolean' }).notNull().default(false),
  },
  (t) => [index('ceremony_events_ceremony_idx').on(t.ceremonyId)],
);

export type SignInEpisodeRow = typeof signInEpisodes.$inferSelect;
export type SignInWaitRow = typeof signInWaits.$inferSelect;
export type NoticeRow = typeof notices.$inferSelect;
export type CeremonyEventRow = typeof ceremonyEvents.$inferSelect;

/**
 * One-time live-view links (issue 16): the SHA-256 of the random token in the link (never the
 * token), the owner and the console session it was issued to (the session's id hash), the
 * sign-in episode it shows, and when it was issued, expires (5 minutes to connect), was used to
 * connect (once) and ended, all epoch ms.
 */
export const liveViews = sqliteTable(
  'live_views',
  {
    tokenHash: text('token_hash').primaryKey(),
    ownerId: text('owner_id').notNull(),
    sessionHash: text('session_hash').notNull(),
    episodeId: text('episode_id').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    usedAt: integer('used_at'),
    endedAt: integer('ended_at'),
  },
  (t) => [index('live_views_episode_idx').on(t.episodeId)],
);

export type LiveViewRow = typeof liveViews.$inferSelect;
