/**
 * The edge's decision cost (issue 5): 500 proposals decided and recorded without dispatch, through
 * `wrangler dev` and its local D1, one after another. Each is a navigation outside the run's
 * origins: validated, authority and taint read, profile loaded, denied, recorded. Prints the
 * median and p95 ms per proposal and the D1 statements per proposal (`X-D1-Statements`), beside a
 * reference measured in the same run: `GET /v1/health`, which touches neither D1 nor the host.
 */
import { ApiClient } from '../scripts/api-client.ts';
import { startLocalStack } from '../scripts/local-stack.ts';
import { row } from './stats.ts';

const PROPOSALS = 500;

const stack = await startLocalStack({
  database: 'fresh',
  headless: true,
  edgeVars: {
    D1_STATEMENT_COUNTER: '1',
    // 500 proposals in a row: above the default proposal rates, which are not what this measures.
    QUOTA_PROPOSALS_PER_MINUTE_PER_AGENT: '100000',
    QUOTA_PROPOSALS_PER_MINUTE_PER_OWNER: '100000',
  },
});
try {
  const owner = new ApiClient(stack.edgeUrl, stack.tokens.owner);
  const run = await owner.createRun({ profile_id: 'bench-decisions', intent: 'decision cost', origins: [stack.siteOrigin], deadline_ms: 3_600_000 });
  const decide: number[] = [];
  const statements: number[] = [];
  const health: number[] = [];
  for (let i = 0; i < PROPOSALS; i++) {
    const started = performance.now();
    const response = await fetch(`${stack.edgeUrl}/v1/runs/${run.id}/tool-calls`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${stack.tokens.agent}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ tool: 'browser.navigate', version: '1.2.0', arguments: { url: `http://127.0.0.9:9/page-${i}` } }),
    });
    await response.arrayBuffer();
    decide.push(performance.now() - started);
    if (response.status !== 403) throw new Error(`proposal ${i}: expected 403 policy_denied, got ${response.status}`);
    statements.push(Number(response.headers.get('X-D1-Statements')));
    const pinged = performance.now();
    await (await fetch(`${stack.edgeUrl}/v1/health`)).arrayBuffer();
    health.push(performance.now() - pinged);
  }
  const mean = statements.reduce((a, b) => a + b, 0) / statements.length;
  console.log(`\nEdge decision cost over ${PROPOSALS} proposals (decided, recorded, not dispatched; wrangler dev, local D1):`);
  console.log(row('proposal decided and recorded', decide));
  console.log(row('reference: GET /v1/health (no D1, no host)', health));
  console.log(`  D1 statements per proposal: mean ${mean.toFixed(1)}, min ${Math.min(...statements)}, max ${Math.max(...statements)}`);
} finally {
  await stack.stop();
}
