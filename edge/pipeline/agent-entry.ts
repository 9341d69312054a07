import { z } from 'zod';
import { ProposeBody } from '../../shared/api.ts';
import type { Principal } from '../auth/principal.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { admitProposal } from '../quotas/rates.ts';
import { type ProposalOutcome, proposeOnRun } from './propose.ts';

/**
 * The one way a proposal enters the tool pipeline, for every caller that proposes: the HTTP
 * route `POST /v1/runs/{id}/tool-calls`, the MCP browser tools and the recipe runner.
 * Every proposal is counted against the principal's and its owner's proposals per minute, well
 * formed or not, and refused past them before anything else: the envelope `{tool, version,
 * arguments}` is validated by the shared {@link ProposeBody} schema (nesting depth included); one
 * that fails is counted by itself (a refusal past the rates wins over the schema's), a valid one
 * with the first read of {@link proposeOnRun} for the run `runId` (one statement for both).
 * @param envelope the proposal as received (unparsed JSON value).
 * @param options.admitted the caller counted the proposal already (the HTTP route counts a body
 *   that is not JSON before the framework refuses it).
 * @returns the finished (200) or parked (202) call.
 * @throws DomainError('rate_limited') with Retry-After past the proposal rates;
 *   DomainError('invalid_arguments') with zod's wording for an envelope that fails its schema
 *   (nothing stored); else as {@link proposeOnRun}.
 */
export async function enterProposal(
  ports: Ports,
  principal: Principal,
  runId: string,
  envelope: unknown,
  options: { readonly admitted?: boolean } = {},
): Promise<ProposalOutcome> {
  const admitted = options.admitted === true;
  const proposal = ProposeBody.safeParse(envelope);
  if (!proposal.success) {
    if (!admitted) await admitProposal(ports, principal);
    throw new DomainError('invalid_arguments', z.prettifyError(proposal.error));
  }
  return proposeOnRun(ports, principal, runId, proposal.data, { admit: !admitted });
}
