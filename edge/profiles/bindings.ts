import { and, eq } from 'drizzle-orm';
import { profileBindings } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { sha256Hex } from '../policy/canonical-hash.ts';
import type { Ports } from '../ports.ts';

/**
 * Profile bindings (ADR-0164 part 3): the trusted binding of an owner's profile name to the
 * host's sealed profile id. This module owns the `profile_bindings` table; revocation.ts fences
 * the work on a revoked profile.
 */

/**
 * Refuses work on a revoked profile.
 * @throws DomainError('profile_revoked') when the owner revoked `profileId`.
 */
export async function assertProfileActive(ports: Ports, ownerId: string, profileId: string): Promise<void> {
  if (await profileRevoked(ports, ownerId, profileId)) throw new DomainError('profile_revoked', `profile ${profileId} was revoked`);
}

/** Whether the owner revoked `profileId`. */
export async function profileRevoked(ports: Ports, ownerId: string, profileId: string): Promise<boolean> {
  return (await bindingOf(ports, ownerId, profileId))?.state === 'revoked';
}

/**
 * The profile id the host sees for an owner's profile: `o<12 hex of SHA-256(owner id)>_<profile>`,
 * at most 62 characters. Profile names are the owner's own; without the owner in the id, another
 * owner naming the same profile would get this owner's cookies and storage.
 */
export async function hostProfileId(ownerId: string, profileId: string): Promise<string> {
  return `o${(await sha256Hex(ownerId)).slice(0, 12)}_${profileId}`;
}

/**
 * The statement that records the owner's profile as bound to `hostProfile` (active) unless a
 * binding exists already (active or revoked: a revoked binding stays revoked). For a batch.
 * @param now epoch ms.
 */
export function bindingStatement(ports: Ports, ownerId: string, profileId: string, hostProfile: string, now: number) {
  return ports.db.insert(profileBindings).values({ ownerId, profileId, hostProfileId: hostProfile, state: 'active', createdAt: now }).onConflictDoNothing();
}

/** The owner's binding of `profileId`, if one was recorded. */
export function bindingOf(ports: Ports, ownerId: string, profileId: string) {
  return ports.db
    .select()
    .from(profileBindings)
    .where(and(eq(profileBindings.ownerId, ownerId), eq(profileBindings.profileId, profileId)))
    .get();
}
