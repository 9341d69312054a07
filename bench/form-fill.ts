/**
 * `npm run bench`: a six-field form (test/fixtures/e2e-hands/address.html) filled through the whole
 * system (agent proposes over HTTP, owner approves over HTTP, the edge dispatches to the host, the
 * host acts, settles and observes), once with one `fill_form` call and once with six `type`
 * calls, each approved by the owner as soon as it is asked. Prints the approvals asked and the
 * wall time of each way (median and p95 over a few rounds) and their ratios (issue 33). Figures,
 * not assertions.
 */
import { ApiClient, observationOf } from '../scripts/api-client.ts';
import { refOf } from '../scripts/aria-refs.ts';
import { startLocalStack } from '../scripts/local-stack.ts';
import type { Observation } from '../shared/observation.ts';
import { startFixtureServer } from '../test/support/fixture-server.ts';
import { row, summary } from './stats.ts';

const ROUNDS = 3;
const VERSION = '1.5.0';
/** The form's six text fields and what each round types into them. */
const FIELDS: ReadonlyArray<readonly [name: string, value: string]> = [
  ['Full name', 'Ada Lovelace'],
  ['Street', '12 St James Square'],
  ['City', 'London'],
  ['Postcode', 'SW1Y 4JH'],
  ['Country', 'United Kingdom'],
  ['Phone', '+44 20 7946 0000'],
];

const site = await startFixtureServer();
const stack = await startLocalStack({ database: 'fresh', headless: true });
try {
  const agent = new ApiClient(stack.edgeUrl, stack.tokens.agent);
  const owner = new ApiClient(stack.edgeUrl, stack.tokens.owner);

  /** Proposes an act; when it parks, the owner approves it. The finished observation and whether the owner was asked. */
  async function act(runId: string, args: Record<string, unknown>): Promise<{ observation: Observation; asked: boolean }> {
    const proposal = await agent.propose(runId, 'browser.act', args, VERSION);
    const call = proposal.status === 202 ? (await owner.decide(proposal.body.approval_id!, 'approve')).tool_call : proposal.body;
    return { observation: observationOf(call), asked: proposal.status === 202 };
  }

  /** One round of one way on a fresh run and page: wall time in ms from the first proposal to the last answer, and approvals asked. */
  async function round(way: 'fill' | 'type', index: number): Promise<{ ms: number; approvals: number }> {
    const run = await owner.createRun({
      profile_id: `bench-form-${way}`,
      intent: `fill the address (${way} ${index})`,
      origins: [site.origin],
      deadline_ms: 600_000,
    });
    try {
      let page = observationOf((await agent.propose(run.id, 'browser.navigate', { url: site.url('e2e-hands/address.html') }, VERSION)).body);
      let approvals = 0;
      const started = performance.now();
      if (way === 'fill') {
        const fields = FIELDS.map(([name, value]) => ({ reference: refOf(page.snapshot, 'textbox', name), value }));
        approvals += Number((await act(run.id, { action: 'fill_form', revision: page.revision, fields })).asked);
      } else {
        for (const [name, text] of FIELDS) {
          const typed = await act(run.id, { action: 'type', revision: page.revision, reference: refOf(page.snapshot, 'textbox', name), text });
          approvals += Number(typed.asked);
          page = typed.observation;
        }
      }
      return { ms: performance.now() - started, approvals };
    } finally {
      await agent.report(run.id, 'completed', 'benchmarked').catch(() => undefined);
    }
  }

  const results = { fill: [] as number[], type: [] as number[] };
  const approvals = { fill: [] as number[], type: [] as number[] };
  for (let i = 0; i < ROUNDS; i++) {
    for (const way of ['fill', 'type'] as const) {
      const { ms, approvals: asked } = await round(way, i);
      results[way].push(ms);
      approvals[way].push(asked);
    }
  }

  const median = (samples: number[]) => summary(samples).median;
  console.log(`\nA six-field form (${ROUNDS} rounds each, headless Chromium, loopback; the owner approves at once):`);
  console.log(row(`one fill_form call (${median(approvals.fill)} approval asked)`, results.fill));
  console.log(row(`six type calls (${median(approvals.type)} approvals asked)`, results.type));
  console.log(
    `\n  ratio, medians: approvals six type / one fill ${(median(approvals.type) / median(approvals.fill)).toFixed(1)}x · wall time six type / one fill ${(median(results.type) / median(results.fill)).toFixed(1)}x`,
  );
  console.log('  (each type call settles the page before the next; a person answering each approval adds their own time per approval)');
} finally {
  await stack.stop();
  await site.close();
}
