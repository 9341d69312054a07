/**
 * `npm run bench` (issue 14): what an observation and the edge cost, each figure next to its
 * target, against references measured in the same run. Figures, not assertions.
 *
 * - Plain observe of a 2,000-control page through the whole system, against raw
 *   `page.ariaSnapshot({mode: 'ai'})` on the same page in a plain playwright-core Chromium with
 *   the same flags: the host's dispatch / raw ratio (target at most 1.15x) and the HTTP / raw one.
 * - Edge overhead per call (HTTP time minus the host's dispatch, as the edge measured it) for a
 *   proposal that dispatches (an observe) and an approval that dispatches (an act): target at
 *   most 40 ms at the median; with where that time goes, from the edge's `Server-Timing`
 *   (D1, the WebSocket upgrade, the host's hello, each wire call, and the rest: validation,
 *   policy, JSON).
 * - D1 statements per request (`X-D1-Statements`): target at most 5 per proposal.
 * - The act's own overhead on a quiet page (prechecks and input: the host's dispatch minus its
 *   settling and its capture), against one direct `locator.click()` (one actionability pass).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { BASE_CHROMIUM_ARGS } from '../browser-host/profiles.ts';
import { ApiClient, observationOf } from '../scripts/api-client.ts';
import { refOf } from '../scripts/aria-refs.ts';
import { startLocalStack } from '../scripts/local-stack.ts';
import { ToolCallView } from '../shared/api.ts';
import { row, summary } from './stats.ts';

const ROUNDS = 20;
const WARM_UP = 3;
const CONTROLS = 2_000;

/** A page of 2,000 controls (buttons and links in list items), and a quiet page with one button. */
const PAGES: Record<string, string> = {
  '/controls.html': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Controls</title></head><body><h1>Controls</h1><ul>${Array.from(
    { length: CONTROLS / 2 },
    (_, i) => `<li><button type="button">Action ${i}</button> <a href="/item/${i}">Item ${i}</a></li>`,
  ).join('')}</ul></body></html>`,
  '/quiet.html': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Quiet</title></head><body><h1>Quiet</h1><button type="button" id="b">Press me</button><p id="n">0</p><script>let n = 0; document.getElementById('b').addEventListener('click', () => { document.getElementById('n').textContent = String(++n); });</script></body></html>`,
};

const pages = createServer((request, response) => {
  const body = PAGES[new URL(request.url ?? '/', 'http://x').pathname];
  response.writeHead(body ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' });
  response.end(body ?? 'not found');
});
await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
const pagesOrigin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;

/** One HTTP call's figures: total ms, the host dispatch ms the edge recorded, D1 statements, Server-Timing spans. */
interface CallFigures {
  readonly httpMs: number;
  readonly dispatchMs: number;
  readonly statements: number;
  readonly spans: Record<string, number>;
  readonly call: ToolCallView;
}

function spansOf(header: string | null): Record<string, number> {
  const spans: Record<string, number> = {};
  for (const part of (header ?? '').split(',')) {
    const match = /^\s*([\w.-]+);dur=([\d.]+)/.exec(part);
    if (match) spans[match[1] as string] = Number(match[2]);
  }
  return spans;
}

const stack = await startLocalStack({ database: 'fresh', headless: true, edgeVars: { D1_STATEMENT_COUNTER: '1' } });
try {
  const owner = new ApiClient(stack.edgeUrl, stack.tokens.owner);
  const send = async (token: string, path: string, body: unknown, pick: (answer: unknown) => unknown = (answer) => answer): Promise<CallFigures> => {
    const started = performance.now();
    const response = await fetch(`${stack.edgeUrl}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const answer = (await response.json()) as unknown;
    const httpMs = performance.now() - started;
    if (response.status >= 300 && response.status !== 202) throw new Error(`${path}: ${response.status} ${JSON.stringify(answer)}`);
    const call = ToolCallView.parse(pick(answer));
    return {
      httpMs,
      dispatchMs: call.phases.dispatch?.elapsed_ms ?? 0,
      statements: Number(response.headers.get('X-D1-Statements')),
      spans: spansOf(response.headers.get('Server-Timing')),
      call,
    };
  };
  const propose = (runId: string, tool: string, args: unknown) =>
    send(stack.tokens.agent, `/v1/runs/${runId}/tool-calls`, { tool, version: '1.4.0', arguments: args });
  const approve = (approvalId: string) =>
    send(stack.tokens.owner, `/v1/approvals/${approvalId}/decision`, { decision: 'approve' }, (answer) => (answer as { tool_call: unknown }).tool_call);

  // 1. Plain observes of the 2,000-control page through the whole system.
  const run = await owner.createRun({ profile_id: 'bench-observe', intent: 'bench', origins: [pagesOrigin], deadline_ms: 1_800_000 });
  observationOf((await propose(run.id, 'browser.navigate', { url: `${pagesOrigin}/controls.html` })).call);
  const observes: CallFigures[] = [];
  for (let i = 0; i < WARM_UP + ROUNDS; i++) {
    const figures = await propose(run.id, 'browser.observe', {});
    if (figures.call.state !== 'succeeded') throw new Error(`observe ${i}: ${figures.call.state}`);
    if (i >= WARM_UP) observes.push(figures);
  }

  // 2. Acts on the quiet page: proposed (parks for the owner), approved (dispatches).
  const quietObserves: CallFigures[] = [];
  const proposals: CallFigures[] = [];
  const approvals: CallFigures[] = [];
  let page = observationOf((await propose(run.id, 'browser.navigate', { url: `${pagesOrigin}/quiet.html` })).call);
  for (let i = 0; i < WARM_UP + ROUNDS; i++) {
    const observed = await propose(run.id, 'browser.observe', {});
    page = observationOf(observed.call);
    const proposal = await propose(run.id, 'browser.act', { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Press me') });
    const approvalId = proposal.call.approval_id;
    if (!approvalId) throw new Error(`act ${i}: no approval (${proposal.call.state})`);
    const approval = await approve(approvalId);
    if (approval.call.state !== 'succeeded') throw new Error(`act ${i}: ${approval.call.state} ${JSON.stringify(approval.call.error)}`);
    if (i >= WARM_UP) {
      quietObserves.push(observed);
      proposals.push(proposal);
      approvals.push(approval);
    }
  }
  await new ApiClient(stack.edgeUrl, stack.tokens.agent).report(run.id, 'completed', 'bench');

  // 3. References straight through playwright-core: same Chromium, same flags, same pages.
  const profile = mkdtempSync(join(tmpdir(), 'bench-observe-'));
  const raw: number[] = [];
  const rawQuiet: number[] = [];
  const directClick: number[] = [];
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: [...BASE_CHROMIUM_ARGS],
  });
  try {
    const direct: Page = context.pages()[0] ?? (await context.newPage());
    await direct.goto(`${pagesOrigin}/controls.html`);
    for (let i = 0; i < WARM_UP + ROUNDS; i++) {
      const started = performance.now();
      await direct.ariaSnapshot({ mode: 'ai' });
      if (i >= WARM_UP) raw.push(performance.now() - started);
    }
    await direct.goto(`${pagesOrigin}/quiet.html`);
    for (let i = 0; i < WARM_UP + ROUNDS; i++) {
      let started = performance.now();
      await direct.ariaSnapshot({ mode: 'ai' });
      if (i >= WARM_UP) rawQuiet.push(performance.now() - started);
      started = performance.now();
      await direct.getByRole('button', { name: 'Press me' }).click();
      if (i >= WARM_UP) directClick.push(performance.now() - started);
    }
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }

  const median = (samples: number[]) => summary(samples).median;
  const pick = (figures: CallFigures[], f: (x: CallFigures) => number) => figures.map(f);
  const target = (value: number, limit: number, unit: string) =>
    `${value.toFixed(unit === 'x' ? 2 : 1)}${unit}  (target at most ${limit}${unit}: ${value <= limit ? 'met' : 'NOT met'})`;

  console.log(`\nPlain observe of a ${CONTROLS}-control page (${ROUNDS} each after ${WARM_UP} warm-up, headless Chromium, loopback):`);
  console.log(row('raw page.ariaSnapshot({mode: "ai"})', raw));
  console.log(
    row(
      "host's dispatch (edge-measured)",
      pick(observes, (x) => x.dispatchMs),
    ),
  );
  console.log(
    row(
      'whole HTTP call',
      pick(observes, (x) => x.httpMs),
    ),
  );
  const observeRatio = median(pick(observes, (x) => x.dispatchMs)) / median(raw);
  console.log(`  ratio, medians: dispatch / raw ${target(observeRatio, 1.15, 'x')}`);
  console.log(`                  HTTP / raw ${(median(pick(observes, (x) => x.httpMs)) / median(raw)).toFixed(2)}x`);

  console.log('\nEdge overhead per call (HTTP time minus host dispatch), medians:');
  const overhead = (figures: CallFigures[]) => pick(figures, (x) => x.httpMs - x.dispatchMs);
  console.log(row('proposal that dispatches (observe)', overhead(observes)));
  console.log(row('approval that dispatches (act)', overhead(approvals)));
  console.log(row('proposal that parks for approval (act)', overhead(proposals)));
  console.log(`  proposal that dispatches: ${target(median(overhead(observes)), 40, ' ms')}`);
  console.log(`  approval that dispatches: ${target(median(overhead(approvals)), 40, ' ms')}`);

  console.log('\nWhere the edge time goes (Server-Timing medians, ms; dispatch = the wire call that carries the action):');
  const spanNames = [...new Set([...observes, ...approvals, ...proposals].flatMap((x) => Object.keys(x.spans)))];
  for (const [label, figures] of [
    ['observe proposal', observes],
    ['act approval', approvals],
    ['act proposal', proposals],
  ] as const) {
    const parts = spanNames
      .filter((name) => figures.some((x) => x.spans[name] !== undefined))
      .map((name) => `${name} ${median(pick(figures, (x) => x.spans[name] ?? 0)).toFixed(1)}`);
    console.log(`  ${label.padEnd(18)} ${parts.join(' · ')}`);
  }

  console.log('\nD1 statements per request (X-D1-Statements), medians:');
  for (const [label, figures] of [
    ['proposal that dispatches (observe)', observes],
    ['proposal that parks for approval (act)', proposals],
  ] as const) {
    const statements = median(pick(figures, (x) => x.statements));
    console.log(`  ${label.padEnd(44)} ${target(statements, 5, '')}`);
  }
  console.log(`  ${'approval that dispatches (act; not a proposal)'.padEnd(44)} ${median(pick(approvals, (x) => x.statements)).toFixed(1)}`);

  const actOverhead = approvals.map((x, i) => x.dispatchMs - observationOf(x.call).settle.elapsed_ms - (quietObserves[i]?.dispatchMs ?? 0));
  console.log('\nAct on a quiet page (one actionability pass, then the input; settling counted from the input):');
  console.log(
    row(
      "host's dispatch of the act (edge-measured)",
      pick(approvals, (x) => x.dispatchMs),
    ),
  );
  console.log(
    row(
      'settle (host-measured, from the input)',
      pick(approvals, (x) => observationOf(x.call).settle.elapsed_ms),
    ),
  );
  console.log(row("act's own overhead (dispatch - settle - observe)", actOverhead));
  console.log(row('reference: direct locator.click()', directClick));
  console.log(row('reference: raw ariaSnapshot of the quiet page', rawQuiet));
} finally {
  await stack.stop();
  pages.close();
}
