import type { PrincipalRow } from '../db/schema.ts';

/** A principal kind (DESIGN.md section 13): agents propose, owners decide, operators configure. */
export type PrincipalKind = PrincipalRow['kind'];

/** The authenticated caller of one request. */
export interface Principal {
  readonly id: string;
  readonly kind: PrincipalKind;
  /** The owner on whose behalf the principal acts; an owner's own id for an owner. */
  readonly ownerId: string;
}
