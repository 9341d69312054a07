import { type AnticipationProvider, AnticipationRequest } from '../../shared/memories.ts';
import { type CitedMemory, type Verification, verifyPredictions } from './verifier.ts';

/**
 * One run's anticipation, decided (ADR-0168): the verified anticipations and refusals, the
 * provider calls made and their cost (USD), and `failure` when no call within the budget answered
 * (the provider threw every time; its message, at most 300 characters).
 */
export interface AnticipationOutcome extends Verification {
  readonly providerCalls: number;
  readonly costUsd: number;
  readonly failure?: string;
}

/**
 * Asks `provider` once for predictions from `request` (the intent and the owner's active memories
 * only: the request is checked against the strict {@link AnticipationRequest}, so nothing else
 * can reach the provider), retrying a failed call while `budget` calls are left, and verifies the
 * first answer with {@link verifyPredictions}. Used by the edge at a run's start and by
 * `npm run memory:evaluate`, so the evidence measures the path runs take.
 * @throws ZodError when `request` holds anything beyond the intent and memory statements.
 */
export async function anticipate(
  provider: AnticipationProvider,
  request: AnticipationRequest,
  cited: (memoryId: string) => CitedMemory | undefined,
  budget: number,
): Promise<AnticipationOutcome> {
  const blinded = AnticipationRequest.parse(request);
  let calls = 0;
  let costUsd = 0;
  let failure = 'no provider call was allowed (budget 0)';
  while (calls < budget) {
    calls += 1;
    try {
      const answer = await provider.anticipate(blinded);
      costUsd += answer.costUsd;
      const verified = verifyPredictions(
        answer.predictions,
        cited,
        blinded.memories.map((m) => m.statement),
      );
      return { ...verified, providerCalls: calls, costUsd };
    } catch (error) {
      failure = (error instanceof Error ? error.message : String(error)).slice(0, 300);
    }
  }
  return { anticipated: [], refused: [], providerCalls: calls, costUsd, failure };
}
