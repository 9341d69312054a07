/**
 * `npm run bench`: 20 act round trips on the TodoMVC demo page through the whole system (agent
 * proposes over HTTP, owner approves over HTTP, the edge dispatches to the host, the host acts,
 * settles and observes), against the same action done directly with playwright-core in the same
 * run. Prints median and p95 of each phase and the ratios. Figures, not assertions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { BASE_CHROMIUM_ARGS } from '../browser-host/profiles.ts';
import { ApiClient, observationOf } from '../scripts/api-client.ts';
import { refOf } from '../scripts/aria-refs.ts';
import { startLocalStack } from '../scripts/local-stack.ts';
import { SCRIPT_HANDLES_SIGNALS } from '../scripts/stop-on-signal.ts';
import { row, summary } from './stats.ts';

const ROUNDS = 20;

const stack = await startLocalStack({ database: 'fresh', headless: true });
try {
  const agent = new ApiClient(stack.edgeUrl, stack.tokens.agent);
  const owner = new ApiClient(stack.edgeUrl, stack.tokens.owner);
  const run = await owner.createRun({ profile_id: 'bench', intent: 'bench', origins: [stack.siteOrigin], deadline_ms: 600_000 });
  let observation = observationOf((await agent.propose(run.id, 'browser.navigate', { url: stack.todoUrl })).body);

  const whole: number[] = [];
  const dispatch: number[] = [];
  const settle: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const started = performance.now();
    const proposal = await agent.propose(run.id, 'browser.act', {
      action: 'type',
      revision: observation.revision,
      reference: refOf(observation.snapshot, 'textbox', 'What needs to be done?'),
      text: `bench item ${i}`,
      submit: true,
    });
    const decided = await owner.decide(proposal.body.approval_id!, 'approve');
    whole.push(performance.now() - started);
    if (decided.tool_call.state !== 'succeeded') throw new Error(`round ${i}: ${decided.tool_call.state} ${JSON.stringify(decided.tool_call.error)}`);
    dispatch.push(decided.tool_call.phases.dispatch!.elapsed_ms!);
    observation = observationOf(decided.tool_call);
    settle.push(observation.settle.elapsed_ms);
  }

  // The same action straight through playwright-core, same Chromium, same flags, same page.
  const profile = mkdtempSync(join(tmpdir(), 'bench-direct-'));
  const direct: number[] = [];
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: [...BASE_CHROMIUM_ARGS],
    ...SCRIPT_HANDLES_SIGNALS,
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(stack.todoUrl);
    const input = page.getByPlaceholder('What needs to be done?');
    for (let i = 0; i < ROUNDS; i++) {
      const started = performance.now();
      await input.fill(`direct item ${i}`);
      await input.press('Enter');
      direct.push(performance.now() - started);
    }
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }

  console.log(`\nAct round trips on the TodoMVC page (${ROUNDS} each, headless Chromium, loopback):`);
  console.log(row('whole HTTP call (propose 202 + approve)', whole));
  console.log(row("host's dispatch (edge-measured)", dispatch));
  console.log(row('settle (host-measured)', settle));
  console.log(row('direct playwright-core fill + Enter', direct));
  const ratio = (a: number[], b: number[]) => (summary(a).median / summary(b).median).toFixed(1);
  console.log(`\n  ratio, medians: whole / direct ${ratio(whole, direct)}x · dispatch / direct ${ratio(dispatch, direct)}x`);
  console.log('  (settling waits at least 300 ms of DOM quiet by design, ADR-0159; the direct path does not settle)');
} finally {
  await stack.stop();
}
