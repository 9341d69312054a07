import { type ActTarget, frameOriginsOf } from '../../shared/act-target.ts';
import type { DecisionRecord } from '../../shared/api.ts';
import { originOf } from '../../shared/origin.ts';
import { callTraits, type ToolInvocation } from '../../shared/tools.ts';
import type { PolicyProfileRow, RunRow } from '../db/schema.ts';
import type { Database } from '../ports.ts';
import { type Authority, type DecisionInput, decide } from './decide.ts';
import { profileInForce, profileOfRow } from './profile.ts';

/** Who proposes, and what the proposing turn has seen (DESIGN.md sections 2 and 4). */
export interface ProposalStance {
  readonly authority: Authority;
  /** The turn has received page-derived tool results. */
  readonly tainted: boolean;
  /** The arguments carry references derived from page content. */
  readonly pageDerived: boolean;
}

/**
 * The input of {@link decide} for a call on `run`: the validated invocation, the arguments as
 * proposed, the run's origins, the origin of the page an act would touch (the run's latest
 * observed URL), the origins of the frames holding every element of an act's `target` (a drag's
 * destination and a fill_form's fields and submit button too) and the proposal's stance. The one
 * place both the proposal and the approval path assemble it.
 */
export function decisionInput(
  run: Pick<RunRow, 'origins' | 'latestUrl'>,
  invocation: ToolInvocation,
  proposed: unknown,
  stance: ProposalStance,
  target?: ActTarget,
): DecisionInput {
  return {
    invocation,
    proposed,
    runOrigins: run.origins,
    pageOrigin: run.latestUrl === null ? undefined : originOf(run.latestUrl),
    ...(target !== undefined ? { frameOrigins: frameOriginsOf(target) } : {}),
    ...stance,
  };
}

/**
 * The stance of an owner's approval (DESIGN.md section 5: approvals are revalidated under the
 * policy in force): the owner approving is `user` authority; taint is what the proposal saw
 * (tainted when unknown); the arguments are page-derived when the tool's always are (an element
 * reference) or the proposal's decision applied the external-untrusted overlay.
 */
export function approvalStance(invocation: ToolInvocation, proposal: DecisionRecord | undefined): ProposalStance {
  return {
    authority: 'user',
    tainted: proposal?.tainted ?? true,
    pageDerived: callTraits(invocation).pageReferences === 'always' || proposal?.overlay === 'external_untrusted',
  };
}

/**
 * Decides a call on `run` under the newest version of the run's policy profile, read here or, as
 * `preloaded.stored`, already read with the proposal (edge/pipeline/proposal-context.ts).
 * @throws DomainError('invalid_request') when the run's profile has no version at all.
 */
export async function decideForRun(
  db: Database,
  run: Pick<RunRow, 'origins' | 'latestUrl' | 'policyProfile'>,
  invocation: ToolInvocation,
  proposed: unknown,
  stance: ProposalStance,
  target?: ActTarget,
  preloaded?: { readonly stored: PolicyProfileRow | undefined },
): Promise<DecisionRecord> {
  const profile = preloaded ? await profileOfRow(preloaded.stored, run.policyProfile) : await profileInForce(db, run.policyProfile);
  return decide(decisionInput(run, invocation, proposed, stance, target), profile);
}
