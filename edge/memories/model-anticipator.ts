import Anthropic from '@anthropic-ai/sdk';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { type AnticipationProvider, type AnticipationRequest, AnticipationResponse, type ProviderAnswer } from '../../shared/memories.ts';

/**
 * Settings of the model adapter: the vendor API key, an optional base URL (a stand-in in tests),
 * the model, and how long one call may take (ms, default {@link MODEL_CALL_TIMEOUT_MS}).
 */
export interface ModelAnticipatorSettings {
  readonly apiKey: string;
  readonly baseUrl?: string;
  readonly model: string;
  readonly timeoutMs?: number;
}

/** How long one provider call may take (ms) before it fails; the run's call budget decides whether another is made. */
export const MODEL_CALL_TIMEOUT_MS = 20_000;

/** Most tokens one answer may hold: 32 predictions of a 500-character statement each, with room to spare. */
export const MODEL_MAX_TOKENS = 8_192;

/**
 * List prices of the vendor's models in US dollars per million tokens, input and output, as the
 * vendor's pricing page gave them when this table was written (the API does not report prices:
 * check the page when adding a model). A prompt-cache write is priced at 1.25 times the input price
 * (the five-minute cache; the adapter asks for no caching) and a cache read at 0.1 times. A model
 * not listed here is billed as 0 by {@link costOfUsage}: its cost is then unknown, not free, and
 * the evidence bundle's cost figure a lower bound.
 */
export const MODEL_PRICES_USD_PER_MTOK: Readonly<Record<string, { readonly input: number; readonly output: number }>> = {
  'claude-opus-4-5': { input: 5, output: 25 },
  'claude-opus-4-1': { input: 15, output: 75 },
  'claude-opus-4-0': { input: 15, output: 75 },
  'claude-sonnet-4-5': { input: 3, output: 15 },
  'claude-sonnet-4-0': { input: 3, output: 15 },
  'claude-haiku-4-5': { input: 1, output: 5 },
  'claude-3-5-haiku-latest': { input: 0.8, output: 4 },
};

/** Token counts of one answer, as the vendor's `usage` gives them (cache counts may be null). */
export interface ModelUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_creation_input_tokens?: number | null;
  readonly cache_read_input_tokens?: number | null;
}

/**
 * What one answer of `model` cost in US dollars, from its token counts and
 * {@link MODEL_PRICES_USD_PER_MTOK}. A dated model id (`claude-haiku-4-5-20251001`) is priced as
 * its undated alias; a model not in the table costs 0 (unknown, see the table).
 */
export function costOfUsage(model: string, usage: ModelUsage): number {
  // Own keys only: a model named `constructor` or `__proto__` is unlisted, not Object.prototype's.
  const listed = (name: string) => (Object.hasOwn(MODEL_PRICES_USD_PER_MTOK, name) ? MODEL_PRICES_USD_PER_MTOK[name] : undefined);
  const price = listed(model) ?? listed(model.replace(/-\d{8}$/, ''));
  if (!price) return 0;
  const tokens =
    usage.input_tokens * price.input +
    (usage.cache_creation_input_tokens ?? 0) * price.input * 1.25 +
    (usage.cache_read_input_tokens ?? 0) * price.input * 0.1 +
    usage.output_tokens * price.output;
  return tokens / 1_000_000;
}

/**
 * The instructions the model is given (ADR-0168). The request itself, the intent and the owner's
 * memories as JSON, is the only user content.
 */
export const ANTICIPATION_SYSTEM_PROMPT = [
  "You anticipate what a browser run will need to know about its owner, from the owner's stored memories.",
  'The user message is JSON: {"intent": the run\'s task in the owner\'s words, "memories": [{"id", "statement"}]}.',
  'Answer with one prediction for each memory the intent needs. Rules:',
  '1. One memory per prediction: each prediction cites exactly one memory_id from the list.',
  "2. Copy that memory's statement verbatim as the prediction's statement: no paraphrase, no summary, no addition.",
  '3. Independent facts are independent predictions: never join two memories in one statement.',
  '4. Bring only the memories the intent needs; bring none when none is needed.',
  '5. Nothing else: no memory that is not in the list, no fact of your own, no advice, no commentary.',
].join('\n');

/**
 * The model adapter (issue 34, DESIGN.md section 19): asks the vendor's Messages API through its
 * official SDK, with {@link AnticipationResponse} as the structured output's JSON schema
 * (`output_config.format`), the rules of ADR-0168 as the system prompt and the blinded request
 * (intent and active memories, JSON) as the only user content. Runs on Workers, Deno and Node
 * (the SDK uses the runtime's `fetch`). One `anticipate` is one HTTP call: the SDK's own retries
 * are off (the run's call budget counts calls) and a call fails after the settings' `timeoutMs`.
 *
 * The answer's `predictions` are returned as given, bad ones included: the verifier refuses them
 * one by one. `costUsd` is priced from the answer's `usage` by {@link costOfUsage} (0 for a model
 * without a listed price). Provider id `anthropic/<model>`.
 * @throws Error when the call fails (network, timeout, an HTTP error such as 429 or 500, whose
 *   status the message names), or when the answer's text is not JSON holding a `predictions` array.
 */
export function modelAnticipator(settings: ModelAnticipatorSettings): AnticipationProvider {
  const timeoutMs = settings.timeoutMs ?? MODEL_CALL_TIMEOUT_MS;
  const client = new Anthropic({
    apiKey: settings.apiKey,
    // null, not undefined: the SDK would read ANTHROPIC_BASE_URL itself; only the settings decide.
    baseURL: settings.baseUrl ?? null,
    maxRetries: 0,
    timeout: timeoutMs,
  });
  const format = zodOutputFormat(AnticipationResponse);
  return {
    id: `anthropic/${settings.model}`,
    async anticipate(request: AnticipationRequest): Promise<ProviderAnswer> {
      let message: Anthropic.Message;
      try {
        message = await client.messages.create({
          model: settings.model,
          max_tokens: MODEL_MAX_TOKENS,
          system: ANTICIPATION_SYSTEM_PROMPT,
          messages: [{ role: 'user', content: requestText(request) }],
          // The schema alone: `create` sends it as data; parsing stays ours (bad predictions are kept for the verifier).
          output_config: { format: { type: 'json_schema', schema: format.schema } },
        });
      } catch (error) {
        throw new Error(`the model provider failed: ${describeFailure(error, timeoutMs)}`);
      }
      return { predictions: predictionsOf(message), costUsd: costOfUsage(settings.model, message.usage) };
    },
  };
}

/** The request as the user content: the intent and each memory's id and statement, nothing else (causal blinding). */
function requestText(request: AnticipationRequest): string {
  return JSON.stringify({ intent: request.intent, memories: request.memories.map(({ id, statement }) => ({ id, statement })) });
}

/** The `predictions` array of a message's text, as given. @throws Error when the text is not JSON holding one. */
function predictionsOf(message: Anthropic.Message): unknown[] {
  const text = message.content
    .filter((block): block is Anthropic.TextBlock => block.type === 'text')
    .map((block) => block.text)
    .join('');
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    throw new Error(`the model's answer is not JSON (stop reason ${message.stop_reason}): ${text.slice(0, 120)}`);
  }
  const predictions = typeof answer === 'object' && answer !== null ? (answer as Record<string, unknown>).predictions : undefined;
  if (!Array.isArray(predictions)) throw new Error(`the model's answer holds no predictions array: ${text.slice(0, 120)}`);
  return predictions;
}

/** A failed call in one line: the HTTP status and the vendor's message, or the network failure. */
function describeFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof Anthropic.APIConnectionTimeoutError) return `no answer within ${timeoutMs} ms`;
  if (error instanceof Anthropic.APIError && error.status !== undefined) return `HTTP ${error.status}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
