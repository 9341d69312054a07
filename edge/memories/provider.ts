import { ANTICIPATION_CALL_BUDGET, type AnticipationProvider } from '../../shared/memories.ts';
import { embeddedAnticipator } from './lexical-anticipator.ts';
import { modelAnticipator } from './model-anticipator.ts';

/** The model the model adapter asks when `MEMORY_MODEL` is unset. */
export const DEFAULT_MEMORY_MODEL = 'claude-sonnet-4-5';

/**
 * Longest one provider call may take before it counts as failed, in ms (two calls: at most 15 s on
 * a run's start). The run start cuts a call off at this bound and the model adapter's own request
 * times out at it too, so a cut-off call does not keep running.
 */
export const ANTICIPATION_CALL_TIMEOUT_MS = 7_500;

/**
 * Longest a run's anticipation may take to be decided after the run is written, in ms: every call
 * of the budget at its timeout, and 5 s to record the decision. A queued run without a recorded
 * decision is not offered to an agent's claim until this long after its creation (a decision that
 * failed to be recorded is logged, and the run is claimable then).
 */
export const ANTICIPATION_DECISION_MS = ANTICIPATION_CALL_BUDGET * ANTICIPATION_CALL_TIMEOUT_MS + 5_000;

/**
 * The configured anticipation provider (DESIGN.md section 19), one choice for the edge (Workers
 * vars, the Deno and Node environment) and `npm run memory:evaluate`, so evidence is recorded for
 * the provider runs use: with `ANTHROPIC_API_KEY` set, the model adapter over the vendor's SDK
 * (`ANTHROPIC_BASE_URL` when set, e.g. a local stand-in; `MEMORY_MODEL`, default
 * {@link DEFAULT_MEMORY_MODEL}); otherwise the embedded lexical anticipator, which needs no key.
 * Empty strings count as unset.
 */
export function anticipationProviderFrom(vars: Record<string, unknown>): AnticipationProvider {
  const setting = (name: string): string | undefined => {
    const value = vars[name];
    return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
  };
  const apiKey = setting('ANTHROPIC_API_KEY');
  if (apiKey === undefined) return embeddedAnticipator;
  const baseUrl = setting('ANTHROPIC_BASE_URL');
  return modelAnticipator({
    apiKey,
    ...(baseUrl === undefined ? {} : { baseUrl }),
    model: setting('MEMORY_MODEL') ?? DEFAULT_MEMORY_MODEL,
    timeoutMs: ANTICIPATION_CALL_TIMEOUT_MS,
  });
}
