import { type AnticipationProvider, AnticipationRequest, MAX_PREDICTIONS, type ProviderAnswer } from '../../shared/memories.ts';
import { ANTICIPATION_CALL_TIMEOUT_MS } from './provider.ts';
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
 * How long one provider call may take: `timeoutMs` (default {@link ANTICIPATION_CALL_TIMEOUT_MS})
 * measured by `sleep` (default a timer that is cleared once the call settles; the run start
 * passes its ports' clock).
 */
export interface AnticipateOptions {
  readonly timeoutMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * Asks `provider` once for predictions from `request` (the intent and the owner's active memories
 * only: the request is checked against the strict {@link AnticipationRequest}, so nothing else
 * can reach the provider), retrying a failed call while `budget` calls are left, and verifies the
 * first answer with {@link verifyPredictions}. A call fails when it throws, does not answer within
 * the timeout ({@link AnticipateOptions}), or answers something other than a list of at most
 * {@link MAX_PREDICTIONS} predictions with a finite, non-negative cost. Used by the edge at a run's start and by
 * `npm run memory:evaluate`, so the evidence measures the path runs take.
 * @throws ZodError when `request` holds anything beyond the intent and memory statements.
 */
export async function anticipate(
  provider: AnticipationProvider,
  request: AnticipationRequest,
  cited: (memoryId: string) => CitedMemory | undefined,
  budget: number,
  options: AnticipateOptions = {},
): Promise<AnticipationOutcome> {
  const blinded = AnticipationRequest.parse(request);
  let calls = 0;
  let costUsd = 0;
  let failure = 'no provider call was allowed (budget 0)';
  while (calls < budget) {
    calls += 1;
    try {
      const answer = checkedAnswer(await withinTimeout(provider, blinded, options));
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
  return { anticipated: [], refused: [], decisions: [], providerCalls: calls, costUsd, failure };
}

/**
 * `answer` when it is `{predictions: [...], costUsd}` with at most {@link MAX_PREDICTIONS}
 * predictions (the response schema's bound) and a finite, non-negative cost (USD).
 * @throws Error saying what is wrong with it otherwise.
 */
function checkedAnswer(answer: unknown): ProviderAnswer {
  if (typeof answer !== 'object' || answer === null) throw new Error('the provider answered no object');
  const { predictions, costUsd } = answer as Record<string, unknown>;
  if (!Array.isArray(predictions)) throw new Error('the provider answered predictions that are not a list');
  if (predictions.length > MAX_PREDICTIONS) {
    throw new Error(`the provider answered ${predictions.length} predictions; the response schema allows at most ${MAX_PREDICTIONS}`);
  }
  if (typeof costUsd !== 'number' || !Number.isFinite(costUsd) || costUsd < 0) throw new Error('the provider answered no finite, non-negative cost');
  return { predictions, costUsd };
}

/** One call of `provider`, or a rejection once the options' timeout has passed. */
async function withinTimeout(provider: AnticipationProvider, request: AnticipationRequest, options: AnticipateOptions): Promise<unknown> {
  const ms = options.timeoutMs ?? ANTICIPATION_CALL_TIMEOUT_MS;
  const late = () => new Error(`${provider.id} did not answer within ${ms} ms`);
  if (options.sleep !== undefined) {
    return Promise.race([provider.anticipate(request), options.sleep(ms).then(() => Promise.reject(late()))]);
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      provider.anticipate(request),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(late()), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
