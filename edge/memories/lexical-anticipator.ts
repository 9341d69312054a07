import type { AnticipationProvider } from '../../shared/memories.ts';

/**
 * The embedded deterministic anticipator (issue 34): lexical retrieval over the owner's active
 * memories, copying each chosen memory's statement. Being written (helper mem-eval); until then
 * every call throws, so runs record `provider_failed`.
 */
export const embeddedAnticipator: AnticipationProvider = {
  id: 'embedded-lexical/1',
  anticipate() {
    return Promise.reject(new Error('the embedded anticipator is not built yet'));
  },
};
