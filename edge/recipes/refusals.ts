import type { DomainError } from '../domain-error.ts';

/**
 * The one refusal table of the recipe runner (issue 19): what a bound run does when the pipeline
 * refuses one of its calls before anything was dispatched, for a read (`browser.observe`,
 * `browser.navigate`) and for a step's act alike. Nothing was sent, so no refusal is ever a
 * reason to send again; the only retry is one return to observation for an act whose page moved
 * on (ADR-0164 part 5: "ambiguous outcomes return to observation instead of replay").
 */

/**
 * What a refusal means for the drive:
 * - `ended`: the run is no longer the runner's (cancelled, gone); the drive records how it ended;
 * - `later`: a passing limit (the profile's lease, a quota, the proposal rate, a call in flight); the next drive tries again;
 * - `observe_again`: an act against a page that changed or a target that is inert: one fresh read, then the step again;
 * - `partial`, `uncertain`, `failed`: the run ends in that status with its final report.
 */
export type RefusalOutcome = 'ended' | 'later' | 'observe_again' | 'partial' | 'uncertain' | 'failed';

const TABLE: Readonly<Record<string, RefusalOutcome>> = {
  run_not_active: 'ended',
  forbidden: 'ended',
  not_found: 'ended',
  profile_in_use: 'later',
  quota_exceeded: 'later',
  rate_limited: 'later',
  call_in_progress: 'later',
  outcome_unknown: 'uncertain',
  profile_revoked: 'failed',
  policy_denied: 'partial',
  stale_revision: 'observe_again',
  not_actionable: 'observe_again',
  invalid_arguments: 'observe_again',
};

/**
 * How the drive answers the refusal `error` of a read or of a step's act.
 * A read cannot return to observation (it is the observation): there `observe_again` and any code
 * not in the table end the run `partial`; for an act a code not in the table ends it `failed`.
 */
export function refusalOutcome(error: DomainError, of: 'read' | 'act'): RefusalOutcome {
  const outcome = TABLE[error.code];
  if (of === 'read') return outcome === undefined || outcome === 'observe_again' ? 'partial' : outcome;
  return outcome ?? 'failed';
}
