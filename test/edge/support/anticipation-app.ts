import { env } from 'cloudflare:test';
import { createApp } from '../../../edge/app.ts';
import { evidenceBundleOf } from '../../../edge/memories/evaluation.ts';
import type { Ports } from '../../../edge/ports.ts';
import type { AnticipationProvider, AnticipationRequest } from '../../../shared/memories.ts';
import { FROZEN_CORPORA } from '../../../shared/memory-corpora.ts';
import { type CorpusScore, EVIDENCE_REPEATS, type EvidenceBundle, type MemoryCorpus } from '../../../shared/memory-evidence.ts';
import type { PolicyProfileView } from '../../../shared/policy.ts';
import { workerdPorts } from './edge-client.ts';

/**
 * Anticipation at a run's start (issue 34) through the Workers app over the real D1, with a
 * deterministic anticipation provider in the ports; memories seeded straight into the table;
 * evidence bundles built over the frozen corpora with their gates from `evidenceGates`.
 */

/** A provider that records every request it is given and answers with `answer(request)`. */
export interface TestProvider extends AnticipationProvider {
  readonly requests: AnticipationRequest[];
}

/** A provider with id `id` answering `answer(request)` (throwing when it throws), recording the requests. */
export function testProvider(id: string, answer: (request: AnticipationRequest) => unknown[]): TestProvider {
  const requests: AnticipationRequest[] = [];
  return {
    id,
    requests,
    async anticipate(request) {
      requests.push(request);
      return { predictions: answer(request), costUsd: 0 };
    },
  };
}

/** Copies every memory it is given whose statement shares a word of four letters or more with the intent. */
export function copyingProvider(id: string): TestProvider {
  return testProvider(id, (request) => {
    const words = new Set(request.intent.toLowerCase().match(/\p{L}{4,}/gu) ?? []);
    return request.memories
      .filter((m) => (m.statement.toLowerCase().match(/\p{L}{4,}/gu) ?? []).some((word) => words.has(word)))
      .map((m) => ({ memory_id: m.id, statement: m.statement }));
  });
}

/** The app with `provider` as its anticipator (and `overrides` of its ports); `request` answers status and JSON body. */
export function anticipationApp(provider: AnticipationProvider, overrides: Partial<Ports> = {}) {
  const ports = (): Ports => ({ ...workerdPorts(), anticipator: provider, ...overrides });
  const app = createApp(ports);
  async function request<Body = Record<string, unknown>>(method: string, path: string, token: string, json?: unknown) {
    const response = await app.request(`http://127.0.0.1:8787${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...(json !== undefined ? { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' } : {}),
      },
      ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
    });
    return { status: response.status, body: (await response.json()) as Body };
  }
  return { request, ports };
}

let seeded = 0;

/** Inserts a memory of `ownerId` (active unless retired) and returns its id. */
export async function seedMemory(ownerId: string, statement: string, state: 'active' | 'retired' = 'active'): Promise<string> {
  const id = `mem_test${String(++seeded).padStart(6, '0')}${crypto.randomUUID().slice(0, 8)}`;
  const now = Date.now() + seeded;
  await env.DB.prepare(
    'INSERT INTO memories (id, owner_id, statement, source, suggestion_id, state, revision, created_at, updated_at, retired_at) VALUES (?, ?, ?, ?, NULL, ?, 1, ?, ?, ?)',
  )
    .bind(id, ownerId, statement, 'owner', state, now, now, state === 'retired' ? now : null)
    .run();
  return id;
}

/** One corpus scored as if every needed memory were recalled in `share` of them (rounded down) and nothing else went wrong. */
function scoreOf(corpus: MemoryCorpus, share: number): CorpusScore {
  const needed = corpus.cases.reduce((sum, c) => sum + c.needed.length, 0);
  const seededClauses = corpus.cases.reduce((sum, c) => sum + c.seeded.length, 0);
  const recalled = Math.floor(needed * share);
  return {
    cases: corpus.cases.length,
    needed,
    directly_recalled: recalled,
    seeded: seededClauses,
    represented: share === 1 ? seededClauses : 0,
    unrepresented: share === 1 ? [] : corpus.cases.flatMap((c) => c.seeded.map((id) => `${c.id}:${id}`)),
    boundary_failures: [],
    refused: 0,
    provider_calls: corpus.cases.length,
    cost_usd: 0,
  };
}

/**
 * An evidence bundle over the frozen corpora for `provider` under `policy`, its gates computed
 * with `evidenceGates`: every needed memory recalled, or with `holdoutShare` only that share of
 * the holdout's (rounded down, so under the 0.95 floor for a share under it).
 */
export async function evidenceBundle(
  provider: string,
  policy: Pick<PolicyProfileView, 'name' | 'version' | 'hash'>,
  holdoutShare = 1,
): Promise<EvidenceBundle> {
  const repeats = Array.from({ length: EVIDENCE_REPEATS }, () => ({
    development: scoreOf(FROZEN_CORPORA.development, 1),
    holdout: scoreOf(FROZEN_CORPORA.holdout, holdoutShare),
  }));
  return evidenceBundleOf(provider, policy, FROZEN_CORPORA, repeats, new Date());
}
