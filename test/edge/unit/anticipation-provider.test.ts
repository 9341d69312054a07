import { describe, expect, it } from 'vitest';
import { embeddedAnticipator } from '../../../edge/memories/lexical-anticipator.ts';
import { anticipationProviderFrom, DEFAULT_MEMORY_MODEL } from '../../../edge/memories/provider.ts';

// One choice of anticipation provider for the edge and `npm run memory:evaluate` (issue 34):
// the model adapter when the vendor's API key is set, else the embedded lexical anticipator.

describe('the configured anticipation provider', () => {
  it('is the embedded anticipator without an API key, or with an empty one', () => {
    expect(anticipationProviderFrom({})).toBe(embeddedAnticipator);
    expect(anticipationProviderFrom({ ANTHROPIC_API_KEY: '  ', MEMORY_MODEL: 'claude-opus-4-1' })).toBe(embeddedAnticipator);
  });

  it('is the model adapter with an API key, asking MEMORY_MODEL or the default model', () => {
    expect(anticipationProviderFrom({ ANTHROPIC_API_KEY: 'sk-test' }).id).toBe(`anthropic/${DEFAULT_MEMORY_MODEL}`);
    expect(anticipationProviderFrom({ ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', MEMORY_MODEL: 'claude-haiku-4-5' }).id).toBe(
      'anthropic/claude-haiku-4-5',
    );
  });
});
