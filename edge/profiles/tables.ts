import { integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { ProfileBindingState } from '../../shared/api.ts';
import { valuesOf } from '../db/enum-values.ts';

// Which owner's browser profile is trusted for which origins.
// Part of the edge's schema: edge/db/schema.ts re-exports every capability's tables for
// drizzle-kit, which generates the migrations in drizzle/.

/**
 * The trusted binding of an owner's profile to the host's sealed profile id (ADR-0164 part 3).
 * A revoked binding fences every wait on it and refuses new runs on the profile.
 */
export const profileBindings = sqliteTable(
  'profile_bindings',
  {
    ownerId: text('owner_id').notNull(),
    profileId: text('profile_id').notNull(),
    /** The id the host knows the sealed profile by (edge/profiles/bindings.ts `hostProfileId`). */
    hostProfileId: text('host_profile_id').notNull(),
    state: text('state', { enum: valuesOf(ProfileBindingState) }).notNull(),
    revokedAt: integer('revoked_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('profile_bindings_owner_profile').on(t.ownerId, t.profileId)],
);
