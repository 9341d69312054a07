import development from './memory-corpora/development.json' with { type: 'json' };
import holdout from './memory-corpora/holdout.json' with { type: 'json' };
import { MemoryCorpus } from './memory-evidence.ts';

/**
 * The frozen memory corpora (issue 34, ADR-0168), shipped in the repository and checked against
 * {@link MemoryCorpus} where they are loaded: `development` (the anticipator may be tuned on it)
 * and `holdout` (never). Evidence names each by the SHA-256 of its canonical JSON; the edge
 * records a bundle only when its corpora hashes are these corpora's.
 */
export const FROZEN_CORPORA: { readonly development: MemoryCorpus; readonly holdout: MemoryCorpus } = {
  development: MemoryCorpus.parse(development),
  holdout: MemoryCorpus.parse(holdout),
};
