import { z } from 'zod';
import { Origin } from '../origin.ts';
import { ActionKind } from '../tool-arguments.ts';

// Owner grants.
// Part of the agent-facing HTTP API v1: shared/api.ts re-exports every resource's file.

/** `POST /v1/grants`: the owner lets calls of one scope run without asking, a bounded number of times. */
export const CreateGrantBody = z
  .strictObject({
    tool: z.literal('browser.act'),
    /** Action kinds covered; omitted covers every kind except what policy denies. */
    actions: z.array(ActionKind).min(1).max(ActionKind.options.length).optional(),
    /** The origin of the page the act touches. */
    origin: Origin,
    max_uses: z.int().min(1).max(1000),
    /** Lifetime from now, in ms (at most 30 days). */
    ttl_ms: z
      .int()
      .min(1_000)
      .max(30 * 24 * 3_600_000),
    /** The policy profile whose runs it covers (default `default`); it is bound to the version in force now. */
    policy_profile: z
      .string()
      .regex(/^[a-z0-9_-]{1,64}$/)
      .optional(),
  })
  .meta({ examples: [{ tool: 'browser.act', actions: ['click', 'check'], origin: 'http://127.0.0.1:8080', max_uses: 3, ttl_ms: 3_600_000 }] });

export type CreateGrantBody = z.infer<typeof CreateGrantBody>;

export const GrantView = z.strictObject({
  id: z.string(),
  tool: z.string(),
  actions: z.array(z.string()).nullable(),
  origin: z.string(),
  max_uses: z.int(),
  uses: z.int(),
  expires_at: z.string(),
  /** The policy profile and the hash of its version the grant was made under. */
  policy_profile: z.string(),
  policy_hash: z.string(),
  /**
   * Why the grant covers nothing now although it is neither revoked, expired nor used up: the
   * profile's version in force has another hash (`policy_changed`). Null while it covers.
   */
  not_covering: z.enum(['policy_changed']).nullable(),
  revoked_at: z.string().nullable(),
  created_at: z.string(),
});

export type GrantView = z.infer<typeof GrantView>;

/** `POST /v1/policy-profiles/{name}/versions/{version}/revoke-grants`: how many grants it revoked. */
export const RevokedGrants = z.strictObject({ policy_profile: z.string(), version: z.int(), policy_hash: z.string(), revoked: z.int() });

export type RevokedGrants = z.infer<typeof RevokedGrants>;

export const GrantList = z.strictObject({ grants: z.array(GrantView) });
