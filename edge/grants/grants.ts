import { and, desc, eq, gt, isNull, lt } from 'drizzle-orm';
import type { CreateGrantBody, GrantView } from '../../shared/api.ts';
import { originOf } from '../../shared/origin.ts';
import { callTraits, type ToolInvocation } from '../../shared/tools.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type GrantRow, grants, policyProfiles } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import { canonicalHash } from '../policy/canonical-hash.ts';
import { DEFAULT_PROFILE_BODY, DEFAULT_PROFILE_VERSION } from '../policy/profile.ts';
import type { Ports } from '../ports.ts';

/**
 * Creates an owner grant bound to `profile`, the policy profile whose runs it covers, and to the
 * hash of its version in force (DESIGN.md section 4, step 4): calls decided under another hash
 * (another profile, or a version the operator published since) are not covered. A grant never
 * creates authority and never covers what policy denies: it only stands in for an approval.
 */
export async function createGrant(ports: Ports, principal: Principal, body: CreateGrantBody, profile: { name: string; hash: string }): Promise<GrantRow> {
  const now = ports.clock.now();
  const row: GrantRow = {
    id: newId('grt'),
    ownerId: principal.ownerId,
    tool: body.tool,
    actions: body.actions ?? null,
    origin: originOf(body.origin) ?? body.origin,
    maxUses: body.max_uses,
    uses: 0,
    expiresAt: now + body.ttl_ms,
    policyProfile: profile.name,
    policyHash: profile.hash,
    revokedAt: null,
    createdAt: now,
  };
  await ports.db.insert(grants).values(row);
  return row;
}

/** The owner's grants, newest first (at most 100). */
export function listGrants(ports: Ports, principal: Principal): Promise<GrantRow[]> {
  return ports.db.select().from(grants).where(eq(grants.ownerId, principal.ownerId)).orderBy(desc(grants.createdAt)).limit(100);
}

/**
 * Revokes a grant; later calls are no longer covered. Uses already charged stay charged.
 * @throws DomainError('not_found') for an unknown grant or another owner's;
 *   DomainError('already_decided') when it was already revoked.
 */
export async function revokeGrant(ports: Ports, principal: Principal, grantId: string): Promise<GrantRow> {
  const row = await ports.db.select().from(grants).where(eq(grants.id, grantId)).get();
  if (!row || row.ownerId !== principal.ownerId) throw new DomainError('not_found', `no grant ${grantId}`);
  const now = ports.clock.now();
  const revoked = await ports.db
    .update(grants)
    .set({ revokedAt: now })
    .where(and(eq(grants.id, grantId), isNull(grants.revokedAt)))
    .run();
  if (rowsChanged(revoked) !== 1) throw new DomainError('already_decided', 'the grant was already revoked');
  return { ...row, revokedAt: now };
}

/**
 * A live grant of the run's owner that covers this act on a page of `pageOrigin`, decided under
 * `policy` (the run's profile and the hash of its version that decided): same tool, the action
 * kind among its actions (or all), same origin, made under the same profile and hash, uses left,
 * not expired, not revoked. Whether a use can really be charged is decided by the database in the
 * dispatch batch. `preloaded`, when given, is every live grant of the owner for the tool, read
 * with the proposal (edge/pipeline/proposal-context.ts); else they are read here.
 */
export async function coveringGrant(
  ports: Ports,
  ownerId: string,
  invocation: ToolInvocation,
  pageOrigin: string | undefined,
  policy: { profile: string; hash: string },
  preloaded?: readonly GrantRow[],
): Promise<GrantRow | undefined> {
  const kind = callTraits(invocation).actionKind;
  if (kind === undefined || pageOrigin === undefined) return undefined;
  const now = ports.clock.now();
  const covers = (grant: GrantRow) => grant.actions === null || grant.actions.includes(kind);
  if (preloaded !== undefined) {
    return preloaded.find(
      (grant) =>
        grant.ownerId === ownerId &&
        grant.tool === invocation.tool &&
        grant.origin === pageOrigin &&
        grant.policyProfile === policy.profile &&
        grant.policyHash === policy.hash &&
        grant.revokedAt === null &&
        grant.expiresAt > now &&
        grant.uses < grant.maxUses &&
        covers(grant),
    );
  }
  const candidates = await ports.db
    .select()
    .from(grants)
    .where(
      and(
        eq(grants.ownerId, ownerId),
        eq(grants.tool, invocation.tool),
        eq(grants.origin, pageOrigin),
        eq(grants.policyProfile, policy.profile),
        eq(grants.policyHash, policy.hash),
        isNull(grants.revokedAt),
        gt(grants.expiresAt, now),
        lt(grants.uses, grants.maxUses),
      ),
    )
    .orderBy(grants.expiresAt)
    .limit(20);
  return candidates.find(covers);
}

/**
 * Revokes every live grant made under version `version` of policy profile `name` (an operator's
 * way to void what owners granted under a policy that is no longer trusted), in one statement.
 * @returns the hash of that version and how many grants were revoked.
 * @throws DomainError('not_found') when the profile has no such version.
 */
export async function revokeGrantsOfVersion(ports: Ports, name: string, version: number): Promise<{ hash: string; revoked: number }> {
  const hash = await versionHash(ports, name, version);
  if (hash === undefined) throw new DomainError('not_found', `policy profile ${name} has no version ${version}`);
  const revoked = await ports.db
    .update(grants)
    .set({ revokedAt: ports.clock.now() })
    .where(and(eq(grants.policyProfile, name), eq(grants.policyHash, hash), isNull(grants.revokedAt)))
    .run();
  return { hash, revoked: rowsChanged(revoked) };
}

/** The hash of version `version` of profile `name` (the built-in default's too), if it exists. */
async function versionHash(ports: Ports, name: string, version: number): Promise<string | undefined> {
  const row = await ports.db
    .select({ hash: policyProfiles.hash })
    .from(policyProfiles)
    .where(and(eq(policyProfiles.name, name), eq(policyProfiles.version, version)))
    .get();
  if (row) return row.hash;
  return name === 'default' && version === DEFAULT_PROFILE_VERSION ? canonicalHash(DEFAULT_PROFILE_BODY) : undefined;
}

/**
 * The API view of a grant; `inForce` is the hash of its profile's version in force now, so the
 * view says when the grant covers nothing because the policy changed.
 */
export function grantView(row: GrantRow, inForce: string): GrantView {
  return {
    id: row.id,
    tool: row.tool,
    actions: row.actions,
    origin: row.origin,
    max_uses: row.maxUses,
    uses: row.uses,
    expires_at: iso(row.expiresAt),
    policy_profile: row.policyProfile,
    policy_hash: row.policyHash,
    not_covering: row.policyHash === inForce ? null : 'policy_changed',
    revoked_at: row.revokedAt === null ? null : iso(row.revokedAt),
    created_at: iso(row.createdAt),
  };
}
