import { desc, eq } from 'drizzle-orm';
import type { PolicyProfileBody, PolicyProfileView } from '../../shared/policy.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { policyProfiles } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { canonicalHash } from './canonical-hash.ts';
import { DEFAULT_PROFILE_VERSION, type PolicyProfile, profileInForce } from './profile.ts';

/**
 * Publishes the next version of policy profile `name` (DESIGN.md section 5). The new version is in
 * force for every later decision; its hash is the SHA-256 of the canonical JSON of its rules and
 * denies, so approvals and grants made under an older version are revalidated before use.
 * @throws DomainError('already_decided') when another version was published concurrently.
 */
export async function publishProfile(ports: Ports, principal: Principal, name: string, body: PolicyProfileBody): Promise<PolicyProfileView> {
  const newest = await ports.db
    .select({ version: policyProfiles.version })
    .from(policyProfiles)
    .where(eq(policyProfiles.name, name))
    .orderBy(desc(policyProfiles.version))
    .limit(1)
    .get();
  const version = Math.max(newest?.version ?? 0, name === 'default' ? DEFAULT_PROFILE_VERSION : 0) + 1;
  const now = ports.clock.now();
  const hash = await canonicalHash(body);
  try {
    await ports.db
      .insert(policyProfiles)
      .values({ id: newId('pol'), name, version, rules: body.rules, denies: body.denies, hash, createdBy: principal.id, createdAt: now });
  } catch {
    throw new DomainError('already_decided', `version ${version} of ${name} was published concurrently; read it and publish again`);
  }
  return { name, version, hash, rules: body.rules, denies: body.denies, created_at: iso(now) };
}

/** The version of `name` in force. @throws DomainError('not_found') for an unknown profile. */
export async function profileView(ports: Ports, name: string): Promise<PolicyProfileView> {
  const row = await ports.db
    .select({ createdAt: policyProfiles.createdAt })
    .from(policyProfiles)
    .where(eq(policyProfiles.name, name))
    .orderBy(desc(policyProfiles.version))
    .limit(1)
    .get();
  if (!row && name !== 'default') throw new DomainError('not_found', `no policy profile named ${name}`);
  const profile: PolicyProfile = await profileInForce(ports.db, name);
  return { name, version: profile.version, hash: profile.hash, rules: profile.body.rules, denies: profile.body.denies, created_at: iso(row?.createdAt ?? 0) };
}
