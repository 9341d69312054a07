import { z } from 'zod';

// Principals, for the operator (issue 32): owners and agents created, listed, rotated and revoked
// without SQL. Part of the HTTP API v1: shared/api.ts re-exports every resource's file.

/** A principal's id as the API names it: `prn_...` for the ones the API creates. */
const PrincipalId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and -');

/** A principal's label: what an operator calls it, e.g. the agent's product or the owner's name. */
const Label = z.string().max(200);

/** Path parameter naming a principal. */
export const PrincipalParam = z.strictObject({
  id: PrincipalId.meta({ description: "the principal's id", examples: ['prn_4ahz5ty6ek3v9dq2m7xw'] }),
});

/** The principal the API description's examples show: an agent of the local owner. */
const PRINCIPAL_EXAMPLE = {
  id: 'prn_4ahz5ty6ek3v9dq2m7xw',
  kind: 'agent',
  owner_id: 'prn_local_owner',
  label: 'research agent',
  created_at: '2026-12-04T09:30:00.000Z',
  revoked_at: null,
} as const;

/** A principal as the API shows it: never its token or the token's hash. ISO-8601 instants. */
export const PrincipalView = z
  .strictObject({
    id: z.string(),
    kind: z.enum(['owner', 'agent', 'operator', 'host']),
    /** The owner the principal acts for: an owner's own id for an owner. */
    owner_id: z.string(),
    label: z.string(),
    created_at: z.string(),
    /** When an operator revoked it; null while its token is accepted. */
    revoked_at: z.string().nullable(),
  })
  .meta({ examples: [PRINCIPAL_EXAMPLE] });
export type PrincipalView = z.infer<typeof PrincipalView>;

export const PrincipalList = z.strictObject({ principals: z.array(PrincipalView) });
export type PrincipalList = z.infer<typeof PrincipalList>;

/**
 * `POST /v1/principals`: an owner, or an agent acting for an existing, unrevoked owner. Operators
 * are not created over the API (an operator can do everything this API does).
 */
export const CreatePrincipalBody = z
  .discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('owner'), label: Label.optional() }),
    z.strictObject({ kind: z.literal('agent'), owner_id: PrincipalId, label: Label.optional() }),
  ])
  .meta({ examples: [{ kind: 'agent', owner_id: 'prn_local_owner', label: 'research agent' }] });
export type CreatePrincipalBody = z.infer<typeof CreatePrincipalBody>;

/**
 * A principal with its new bearer token: the answer of a creation or a rotation, the one time the
 * token is shown (the edge keeps only its SHA-256).
 */
export const IssuedPrincipal = PrincipalView.extend({
  /** The bearer token (43 URL-safe characters, 256 random bits); store it now: it is never shown again. */
  token: z.string(),
}).meta({
  examples: [{ ...PRINCIPAL_EXAMPLE, token: 'q3Jx9v0bq4Jm0Zp8yC1dT2kLw7sN5eR6uH4aG8fB2cE' }],
});
export type IssuedPrincipal = z.infer<typeof IssuedPrincipal>;
