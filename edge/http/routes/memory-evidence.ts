import { createRoute } from '@hono/zod-openapi';
import { EvidenceBundle, EvidenceRecordList, EvidenceRecordView } from '../../../shared/memory-evidence.ts';
import { listEvidence, publishEvidence } from '../../memories/evidence.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

const score = {
  cases: 1,
  needed: 1,
  directly_recalled: 1,
  seeded: 1,
  represented: 1,
  unrepresented: [],
  boundary_failures: [],
  refused: 0,
  provider_calls: 1,
  cost_usd: 0,
};

/**
 * The bundle with an example: one a `memory:evaluate` run writes, though not over this edge's
 * corpora (their hashes are the corpora's own), so the example is refused as `evidence_mismatch`.
 */
const PublishedBundle = EvidenceBundle.meta({
  examples: [
    {
      format: 1,
      provider: 'embedded-lexical/1',
      policy_profile: { name: 'default', version: 3, hash: '0'.repeat(64) },
      corpora: { development: { hash: '1'.repeat(64), cases: 1 }, holdout: { hash: '2'.repeat(64), cases: 1 } },
      repeats: [0, 1, 2].map(() => ({ development: score, holdout: score })),
      gates: [],
      passed: true,
      provider_calls: 6,
      cost_usd: 0,
      created_at: '2026-12-07T01:00:00.000Z',
    },
  ],
});

const publish = createRoute({
  method: 'post',
  path: '/v1/memory-evidence',
  summary:
    'Publish a memory evidence bundle (`npm run memory:evaluate`): the edge recomputes the gates from its counts and records only a passing bundle scored on its frozen corpora under a known policy profile version; runs under that version and provider are anticipated from then on',
  security,
  middleware: [requirePrincipal('operator')] as const,
  request: { body: jsonBody(PublishedBundle) },
  responses: {
    201: jsonResponse(EvidenceRecordView, 'the recorded evidence, with the gates as the edge computed them'),
    ...errorResponses(...AUTH_ERRORS, 'evidence_gates_failed', 'evidence_mismatch'),
  },
});

const list = createRoute({
  method: 'get',
  path: '/v1/memory-evidence',
  summary: 'The memory evidence recorded, newest first (at most 100)',
  security,
  middleware: [requirePrincipal('operator')] as const,
  responses: { 200: jsonResponse(EvidenceRecordList, 'the evidence records'), ...errorResponses(...AUTH_ERRORS) },
});

/** Memory evidence endpoints (issue 34, ADR-0168): operators only. */
export const memoryEvidenceRoutes = newRouter()
  .openapi(publish, async (c) => c.json(await publishEvidence(c.var.ports, c.var.principal, c.req.valid('json')), 201))
  .openapi(list, async (c) => c.json({ evidence: await listEvidence(c.var.ports) }, 200));
