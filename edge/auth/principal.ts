import type { PrincipalRow } from '../db/schema.ts';

/**
 * A principal kind (DESIGN.md section 13): agents propose, owners decide, operators configure.
 * `recipe_runner` is the edge's own runner of a recipe-bound run (issue 19): never a token
 * holder, it proposes through the same pipeline with the authority of the owner's message.
 */
export type PrincipalKind = PrincipalRow['kind'] | 'recipe_runner';

/** The authenticated caller of one request. */
export interface Principal {
  readonly id: string;
  readonly kind: PrincipalKind;
  /** The owner on whose behalf the principal acts; an owner's own id for an owner. */
  readonly ownerId: string;
}
