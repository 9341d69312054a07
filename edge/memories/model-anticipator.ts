import type { AnticipationProvider } from '../../shared/memories.ts';

/** Settings of the model adapter: the vendor API key, an optional base URL (a stand-in in tests) and the model. */
export interface ModelAnticipatorSettings {
  readonly apiKey: string;
  readonly baseUrl?: string;
  readonly model: string;
}

/**
 * The model adapter (issue 34): the vendor's official SDK with the response schema as structured
 * output. Being written (helper mem-model); until then every call throws.
 */
export function modelAnticipator(settings: ModelAnticipatorSettings): AnticipationProvider {
  return {
    id: `anthropic/${settings.model}`,
    anticipate() {
      return Promise.reject(new Error('the model anticipator is not built yet'));
    },
  };
}
