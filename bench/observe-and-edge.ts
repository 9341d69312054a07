/**
 * `npm run bench` (issues 14 and 35): what an observation and an act cost through the whole system,
 * phase by phase, each figure next to its target, against references measured in the same run, in
 * headless Chromium and in the host's headed Chromium (under its own Xvfb). Figures, not assertions.
 *
 * - Plain observe of a 2,000-control page, against raw `page.ariaSnapshot({mode: 'ai'})` on the
 *   same page in a plain playwright-core Chromium with the same flags: the host's dispatch / raw
 *   ratio (target at most 1.15x) and the HTTP / raw one (at most 1.25x).
 * - Acts on a quiet page: the act's own overhead (the host's dispatch less its settling, which
 *   counts from the input, and less a plain observe of the same page: the target check and the
 *   actionability trial; target at most 25 ms), against one direct `locator.click()`.
 * - Edge overhead per call (HTTP time less the host's dispatch as the edge measured it): at most
 *   20 ms for a proposal that dispatches, 25 ms for an approval that dispatches; D1 statements
 *   (`X-D1-Statements`): at most 4 per proposal, 6 per approval. Beside them, what no code of
 *   ours can take away: the dev server's floor (`GET /v1/health`, which reads nothing, through
 *   the same `wrangler dev`), and the D1 round trips each call makes (`X-D1-Round-Trips`, a batch
 *   is one) with the median ms one takes.
 * - A quiet click over HTTP (the approval that dispatches it) against Playwright MCP's
 *   `browser_click` on the same page in the same run (about 0.6x expected).
 * - The phase table: where each observe's and act's time goes (bench/phase-table.ts).
 * - Last, for reference, the edge overhead of the same edge code on Node (edge/node.ts over a
 *   SQLite file), headless: what the code costs where the server in front of it and the database
 *   are cheap. The targets are read on `wrangler dev` only.
 *
 * The owner approves each act 250 ms after it parked: no person approves faster, and the picture
 * of the parked page (taken in the page's turn right after the proposal) is done by then, as it
 * is whenever a person decides.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, type Page } from 'playwright-core';
import { Deadline } from '../browser-host/deadline.ts';
import { startVirtualDisplay } from '../browser-host/display.ts';
import { BASE_CHROMIUM_ARGS } from '../browser-host/profiles.ts';
import { ApiClient, observationOf } from '../scripts/api-client.ts';
import { refOf } from '../scripts/aria-refs.ts';
import type { EdgeRuntime } from '../scripts/local-edge.ts';
import { startLocalStack } from '../scripts/local-stack.ts';
import { SCRIPT_HANDLES_SIGNALS } from '../scripts/stop-on-signal.ts';
import { ToolCallView } from '../shared/api.ts';
import { phaseTable, type Spans, spansOf } from './phase-table.ts';
import { measurePlaywrightMcpClicks } from './playwright-mcp-reference.ts';
import { row, summary } from './stats.ts';

const ROUNDS = 20;
const WARM_UP = 3;
const CONTROLS = 2_000;
/** How long after the proposal the owner approves, in ms (see the module's description). */
const APPROVAL_PAUSE_MS = 250;

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

/** One HTTP call's figures: total ms, the host dispatch ms the edge recorded, D1 statements and round trips, Server-Timing spans. */
interface CallFigures {
  readonly httpMs: number;
  readonly dispatchMs: number;
  readonly statements: number;
  readonly roundTrips: number;
  readonly spans: Spans;
  readonly call: ToolCallView;
}

/** Everything one mode (headless or headed) measured. */
interface ModeFigures {
  readonly observes: CallFigures[];
  readonly quietObserves: CallFigures[];
  readonly proposals: CallFigures[];
  readonly approvals: CallFigures[];
  /** `GET /v1/health` through the same dev server, ms: a request that reads nothing and asks no host. */
  readonly floor: number[];
  readonly raw: number[];
  readonly rawQuiet: number[];
  readonly directClick: number[];
  readonly mcpClicks: number[];
}

/**
 * The whole system (the edge on `runtime`, `wrangler dev` unless told, and the host, `headless` or
 * headed) against the two pages.
 */
async function measureSystem(
  headless: boolean,
  runtime: EdgeRuntime = 'workers',
): Promise<Omit<ModeFigures, 'raw' | 'rawQuiet' | 'directClick' | 'mcpClicks'>> {
  const stack = await startLocalStack({
    runtime,
    database: 'fresh',
    headless,
    edgeVars: { D1_STATEMENT_COUNTER: '1' },
    hostVars: { HOST_PHASE_TIMINGS: '1' },
  });
  try {
    const owner = new ApiClient(stack.edgeUrl, stack.tokens.owner);
    const send = async (token: string, path: string, body: unknown, pick: (answer: unknown) => unknown = (answer) => answer): Promise<CallFigures> => {
      const started = performance.now();
      const response = await fetch(`${stack.edgeUrl}${path}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      // The call ends when its answer has arrived; reading the JSON is the agent's own work.
      const text = await response.text();
      const httpMs = performance.now() - started;
      const answer = JSON.parse(text) as unknown;
      if (response.status >= 300 && response.status !== 202) throw new Error(`${path}: ${response.status} ${JSON.stringify(answer)}`);
      const call = ToolCallView.parse(pick(answer));
      return {
        httpMs,
        dispatchMs: call.phases.dispatch?.elapsed_ms ?? 0,
        statements: Number(response.headers.get('X-D1-Statements')),
        roundTrips: Number(response.headers.get('X-D1-Round-Trips')),
        spans: spansOf(response.headers.get('Server-Timing')),
        call,
      };
    };
    const propose = (runId: string, tool: string, args: unknown) =>
      send(stack.tokens.agent, `/v1/runs/${runId}/tool-calls`, { tool, version: '1.4.0', arguments: args });
    const approve = (approvalId: string) =>
      send(stack.tokens.owner, `/v1/approvals/${approvalId}/decision`, { decision: 'approve' }, (answer) => (answer as { tool_call: unknown }).tool_call);

    // 1. Plain observes of the 2,000-control page.
    const run = await owner.createRun({ profile_id: 'bench-observe', intent: 'bench', origins: [pagesOrigin], deadline_ms: 1_800_000 });
    observationOf((await propose(run.id, 'browser.navigate', { url: `${pagesOrigin}/controls.html` })).call);
    const observes: CallFigures[] = [];
    for (let i = 0; i < WARM_UP + ROUNDS; i++) {
      const figures = await propose(run.id, 'browser.observe', {});
      if (figures.call.state !== 'succeeded') throw new Error(`observe ${i}: ${figures.call.state}`);
      if (i >= WARM_UP) observes.push(figures);
    }

    // The dev server's floor: a request that reads nothing and asks no host, on the same stack.
    const floor: number[] = [];
    for (let i = 0; i < WARM_UP + ROUNDS; i++) {
      const started = performance.now();
      const response = await fetch(`${stack.edgeUrl}/v1/health`);
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`health: ${response.status}`);
      if (i >= WARM_UP) floor.push(performance.now() - started);
    }

    // 2. Acts on the quiet page: observed, proposed (parks for the owner), approved (dispatches).
    const quietObserves: CallFigures[] = [];
    const proposals: CallFigures[] = [];
    const approvals: CallFigures[] = [];
    observationOf((await propose(run.id, 'browser.navigate', { url: `${pagesOrigin}/quiet.html` })).call);
    for (let i = 0; i < WARM_UP + ROUNDS; i++) {
      const observed = await propose(run.id, 'browser.observe', {});
      const page = observationOf(observed.call);
      const proposal = await propose(run.id, 'browser.act', {
        action: 'click',
        revision: page.revision,
        reference: refOf(page.snapshot, 'button', 'Press me'),
      });
      const approvalId = proposal.call.approval_id;
      if (!approvalId) throw new Error(`act ${i}: no approval (${proposal.call.state})`);
      await sleep(APPROVAL_PAUSE_MS);
      const approval = await approve(approvalId);
      if (approval.call.state !== 'succeeded') throw new Error(`act ${i}: ${approval.call.state} ${JSON.stringify(approval.call.error)}`);
      if (!observationOf(approval.call).snapshot.includes(`paragraph [ref=`) || !observationOf(approval.call).snapshot.includes(`"${i + 1}"`)) {
        throw new Error(`act ${i}: the click did not count (${observationOf(approval.call).snapshot})`);
      }
      if (i >= WARM_UP) {
        quietObserves.push(observed);
        proposals.push(proposal);
        approvals.push(approval);
      }
    }
    await new ApiClient(stack.edgeUrl, stack.tokens.agent).report(run.id, 'completed', 'bench');
    return { observes, quietObserves, proposals, approvals, floor };
  } finally {
    await stack.stop();
  }
}

/** The references, straight through playwright-core and through Playwright MCP: same Chromium, same flags, same pages. */
async function measureReferences(headless: boolean): Promise<Pick<ModeFigures, 'raw' | 'rawQuiet' | 'directClick' | 'mcpClicks'>> {
  const starting = Deadline.after(10_000);
  const display = headless ? undefined : await startVirtualDisplay(starting).finally(() => starting.dispose());
  const env = display === undefined ? undefined : { ...process.env, DISPLAY: display.name, XAUTHORITY: display.authority };
  const profile = mkdtempSync(join(tmpdir(), 'bench-observe-'));
  try {
    const raw: number[] = [];
    const rawQuiet: number[] = [];
    const directClick: number[] = [];
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
      headless,
      args: [...BASE_CHROMIUM_ARGS],
      ...(env === undefined ? {} : { env }),
      ...SCRIPT_HANDLES_SIGNALS,
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
    }
    const mcpClicks = await measurePlaywrightMcpClicks({
      pageUrl: `${pagesOrigin}/quiet.html`,
      buttonName: 'Press me',
      rounds: ROUNDS,
      warmUp: WARM_UP,
      headless,
      ...(display === undefined ? {} : { display: display.name, xauthority: display.authority }),
    });
    return { raw, rawQuiet, directClick, mcpClicks };
  } finally {
    rmSync(profile, { recursive: true, force: true });
    await display?.close();
  }
}

/** Each call's edge overhead, ms: its HTTP time less the host's dispatch as the edge measured it. */
function overhead(calls: readonly CallFigures[]): number[] {
  return calls.map((x) => x.httpMs - x.dispatchMs);
}

/** Prints the edge overhead of each kind of call and, labelled `floorLabel`, the server's floor (ms). */
function printEdgeOverhead(figures: Pick<ModeFigures, 'observes' | 'approvals' | 'proposals' | 'floor'>, floorLabel: string): void {
  console.log('\nEdge overhead per call (HTTP time less the host dispatch):');
  console.log(row('proposal that dispatches (observe)', overhead(figures.observes)));
  console.log(row('approval that dispatches (act)', overhead(figures.approvals)));
  console.log(row('proposal that parks for approval (act)', overhead(figures.proposals)));
  console.log(row(floorLabel, figures.floor));
}

/** A figure next to its target: `value` at most `limit`, with its unit. */
function target(value: number, limit: number, unit: 'x' | ' ms' | ''): string {
  const shown = unit === 'x' ? value.toFixed(2) : value.toFixed(1);
  return `${shown}${unit}  (target at most ${limit}${unit}: ${value <= limit ? 'met' : 'NOT met'})`;
}

/** Prints one mode's figures; answers its target lines. */
function report(mode: string, figures: ModeFigures): string[] {
  const median = (samples: number[]) => summary(samples).median;
  const { observes, quietObserves, proposals, approvals } = figures;
  console.log(`\n=== ${mode} Chromium (${ROUNDS} each after ${WARM_UP} warm-up, loopback) ===`);
  console.log(`\nPlain observe of a ${CONTROLS}-control page:`);
  console.log(row('raw page.ariaSnapshot({mode: "ai"})', figures.raw));
  console.log(
    row(
      "host's dispatch (edge-measured)",
      observes.map((x) => x.dispatchMs),
    ),
  );
  console.log(
    row(
      'whole HTTP call',
      observes.map((x) => x.httpMs),
    ),
  );

  const actOverhead = approvals.map((x, i) => x.dispatchMs - observationOf(x.call).settle.elapsed_ms - (quietObserves[i]?.dispatchMs ?? 0));
  console.log('\nAct on a quiet page (settling counts from the input):');
  console.log(
    row(
      "host's dispatch of the act (edge-measured)",
      approvals.map((x) => x.dispatchMs),
    ),
  );
  console.log(
    row(
      'settle (host-measured, from the input)',
      approvals.map((x) => observationOf(x.call).settle.elapsed_ms),
    ),
  );
  console.log(
    row(
      "host's dispatch of a plain observe there",
      quietObserves.map((x) => x.dispatchMs),
    ),
  );
  console.log(row("act's own overhead (dispatch-settle-observe)", actOverhead));
  console.log(row('reference: direct locator.click()', figures.directClick));
  console.log(row('reference: raw ariaSnapshot of the quiet page', figures.rawQuiet));
  console.log(
    row(
      'quiet click over HTTP (the approval)',
      approvals.map((x) => x.httpMs),
    ),
  );
  console.log(row("reference: Playwright MCP's browser_click", figures.mcpClicks));

  printEdgeOverhead(figures, "dev server's floor (GET /v1/health)");
  const perRoundTrip = [...observes, ...approvals, ...proposals].flatMap((x) =>
    x.roundTrips > 0 && x.spans.d1 !== undefined ? [x.spans.d1 / x.roundTrips] : [],
  );
  console.log(row('one D1 round trip (d1 span / trips)', perRoundTrip));
  const trips = (calls: CallFigures[]) => median(calls.map((x) => x.roundTrips));
  console.log(
    `  D1 round trips per call (medians): observe ${trips(observes)}, act ${trips(approvals)}, park ${trips(proposals)}; a batch is one, whatever it holds`,
  );

  console.log('\nWhere the time goes:');
  for (const line of phaseTable([
    ['observe', observes],
    ['act', approvals],
    ['park', proposals],
  ]))
    console.log(line);

  const statements = (calls: CallFigures[]) => median(calls.map((x) => x.statements));
  return [
    `  ${mode}: observe dispatch / raw snapshot     ${target(median(observes.map((x) => x.dispatchMs)) / median(figures.raw), 1.15, 'x')}`,
    `  ${mode}: observe over HTTP / raw snapshot    ${target(median(observes.map((x) => x.httpMs)) / median(figures.raw), 1.25, 'x')}`,
    `  ${mode}: act's own overhead                  ${target(median(actOverhead), 25, ' ms')}`,
    `  ${mode}: edge overhead, proposal (observe)   ${target(median(overhead(observes)), 20, ' ms')}`,
    `  ${mode}: edge overhead, approval (act)       ${target(median(overhead(approvals)), 25, ' ms')}`,
    `  ${mode}: D1 statements, proposal (observe)   ${target(statements(observes), 4, '')}`,
    `  ${mode}: D1 statements, proposal (parks)     ${target(statements(proposals), 4, '')}`,
    `  ${mode}: D1 statements, approval (act)       ${target(statements(approvals), 6, '')}`,
    `  ${mode}: quiet click over HTTP / MCP's       ${(median(approvals.map((x) => x.httpMs)) / median(figures.mcpClicks)).toFixed(2)}x  (about 0.6x expected)`,
  ];
}

try {
  const targets: string[] = [];
  for (const [mode, headless] of [
    ['headless', true],
    ['headed', false],
  ] as const) {
    const system = await measureSystem(headless);
    const references = await measureReferences(headless);
    targets.push(...report(mode, { ...system, ...references }));
  }
  // The same edge code on Node (edge/node.ts over a SQLite file), headless: what the edge's own
  // code costs where the server in front of it and the database are cheap.
  const onNode = await measureSystem(true, 'node');
  console.log('\n=== reference: the same edge on Node (edge/node.ts, SQLite file), headless ===');
  printEdgeOverhead(onNode, "the server's floor (GET /v1/health)");
  console.log('\nTargets (issue 35), medians of this run:');
  for (const line of targets) console.log(line);
} finally {
  pages.close();
}
