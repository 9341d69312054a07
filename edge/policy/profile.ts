import { desc, eq } from 'drizzle-orm';
import { PolicyProfileBody } from '../../shared/policy.ts';
import { type PolicyProfileRow, policyProfiles } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Database } from '../ports.ts';
import { canonicalHash } from './canonical-hash.ts';

/** A profile version in force: its name, version, content and content hash. */
export interface PolicyProfile {
  readonly name: string;
  readonly version: number;
  readonly body: PolicyProfileBody;
  /** SHA-256 hex of the canonical JSON of `body`; approvals and grants bind to it. */
  readonly hash: string;
}

/**
 * The built-in `default` profile, version 3: observe allowed, navigation allowed to the run's
 * origins, a bounded scroll of 1-2,000 px allowed (version 2, ADR-0168), a bare hover allowed
 * (version 3, issue 33: `bounded_browser_hover`), every other act asks the owner.
 * It is in force until an operator publishes a stored version of `default`.
 */
export const DEFAULT_PROFILE_BODY: PolicyProfileBody = {
  rules: [
    { id: 'observe.allow', tool: 'browser.observe', effect: 'allow' },
    { id: 'navigate.run_origins', tool: 'browser.navigate', effect: 'allow', condition: 'run_origin' },
    { id: 'act.bounded_scroll', tool: 'browser.act', effect: 'allow', condition: 'bounded_browser_scroll' },
    { id: 'act.bounded_hover', tool: 'browser.act', effect: 'allow', condition: 'bounded_browser_hover' },
    { id: 'act.approval', tool: 'browser.act', effect: 'approval' },
  ],
  denies: [],
};

/** The built-in version number of {@link DEFAULT_PROFILE_BODY}. */
export const DEFAULT_PROFILE_VERSION = 3;

/**
 * The newest version of profile `name`: the stored one, or for `default` the built-in one when
 * none is stored.
 * @throws DomainError('invalid_request') for a profile name that has no version at all.
 */
export async function profileInForce(db: Database, name: string): Promise<PolicyProfile> {
  const row = await db.select().from(policyProfiles).where(eq(policyProfiles.name, name)).orderBy(desc(policyProfiles.version)).limit(1).get();
  return profileOfRow(row, name);
}

/**
 * The profile `name` in force given its newest stored version `row` (read by the caller): that
 * version, or, with none stored, the built-in default for `default`.
 * @throws DomainError('invalid_request') when another name has no stored version.
 */
export async function profileOfRow(row: PolicyProfileRow | undefined, name: string): Promise<PolicyProfile> {
  if (row) {
    const body = PolicyProfileBody.parse({ rules: row.rules, denies: row.denies });
    return { name, version: row.version, body, hash: row.hash };
  }
  if (name !== 'default') throw new DomainError('invalid_request', `no policy profile named ${name}`);
  return { name, version: DEFAULT_PROFILE_VERSION, body: DEFAULT_PROFILE_BODY, hash: await canonicalHash(DEFAULT_PROFILE_BODY) };
}
