/**
 * The reference a quiet click over our HTTP API is compared with (issue 35: "a quiet click over
 * HTTP then comes to about 0.6x of Playwright MCP's"): Playwright MCP's own `browser_click`, timed
 * from an MCP client as an agent would see it, on the same quiet page, in the same run.
 *
 * The server is `@playwright/mcp` (devDependency) started as a child over stdio, configured by a
 * `--config` file written to a fresh temporary directory:
 * `{browser: {browserName: 'chromium', isolated: true, launchOptions: {executablePath, headless,
 * args: BASE_CHROMIUM_ARGS}}}` (Debian's Chromium, never a download; an in-memory profile; the flags
 * of the host's raw reference), with `--output-dir` in that directory too, since every navigation
 * and click saves its snapshot there. Everything else is Playwright MCP's default, settle wait
 * included (`--timeout-settle`, 500 ms): the reference is the tool as shipped.
 *
 * Run directly, it measures itself against a quiet page it serves on loopback:
 * `node scripts/toolchain.mjs npx tsx bench/playwright-mcp-reference.ts`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BASE_CHROMIUM_ARGS } from '../browser-host/profiles.ts';
import { refOf } from '../scripts/aria-refs.ts';
import { parseAriaSnapshot, walkAria } from '../shared/aria-snapshot.ts';
import { row } from './stats.ts';

/** How long one MCP request may take, in ms (a click with its settle wait takes about 0.6 s). */
const CALL_TIMEOUT_MS = 15_000;
/** How long starting the server and the MCP handshake may take, in ms. */
const CONNECT_TIMEOUT_MS = 20_000;
/** The whole measurement's budget beyond the rounds, in ms, plus {@link ROUND_BUDGET_MS} per round. */
const BASE_BUDGET_MS = 15_000;
const ROUND_BUDGET_MS = 1_500;
/** How much of the server's stderr is kept for an error message, in characters. */
const STDERR_TAIL_CHARS = 4_000;

/** What {@link measurePlaywrightMcpClicks} measures and how. */
export interface PlaywrightMcpClickOptions {
  /** The quiet page: a button named `buttonName` whose click increments the number in the page's one paragraph. */
  readonly pageUrl: string;
  /** The button's accessible name, e.g. `Press me`. */
  readonly buttonName: string;
  /** Timed clicks, one sample each. */
  readonly rounds: number;
  /** Untimed clicks before them (each still checked). */
  readonly warmUp: number;
  readonly headless: boolean;
  /** `DISPLAY` for headed Chromium (e.g. from browser-host/display.ts `startVirtualDisplay`), else this process's; ignored when headless. */
  readonly display?: string;
  /** `XAUTHORITY` for headed Chromium: the authority file of `display`, if it needs one. */
  readonly xauthority?: string;
}

/**
 * Times Playwright MCP's `browser_click` on a quiet page: navigates once (`browser_navigate`), then
 * per click takes a `browser_snapshot` (untimed) to read the button's ref by role and name, as an
 * agent would, and times `callTool('browser_click', {element, target: ref})` with
 * `performance.now()` around the call. Every click is checked: the tool answers without `isError`
 * and the page's counter (its one paragraph) went up by one, read from the next snapshot.
 *
 * The server and its Chromium are always stopped before this returns or throws (the MCP client
 * closes stdin, then SIGTERM, then SIGKILL after 2 s each). Every request has a timeout
 * (15 s; 20 s to connect) and the whole measurement a budget of 15 s + 1.5 s per click (50 s for 23).
 *
 * @returns the `browser_click` round trips of the `rounds` timed clicks, in ms, in order.
 * @throws Error when the server does not start, a tool answers with an error, the button is not
 *   exactly one in the snapshot, a click does not move the counter, or a timeout passes; the
 *   message carries the tail of the server's stderr.
 */
export async function measurePlaywrightMcpClicks(options: PlaywrightMcpClickOptions): Promise<number[]> {
  const display = options.display ?? process.env.DISPLAY;
  if (!options.headless && !display) throw new Error('Playwright MCP reference: headed Chromium needs a display (options.display or DISPLAY)');
  const directory = await mkdtemp(join(tmpdir(), 'playwright-mcp-reference-'));
  const budget = AbortSignal.timeout(BASE_BUDGET_MS + ROUND_BUDGET_MS * (options.rounds + options.warmUp));
  let stderrTail = '';
  let client: Client | undefined;
  let transport: StdioClientTransport | undefined;
  try {
    const configPath = join(directory, 'config.json');
    await writeFile(configPath, JSON.stringify(serverConfig(options)));
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [playwrightMcpCli(), '--config', configPath, '--output-dir', join(directory, 'output')],
      cwd: directory,
      env: {
        PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1',
        ...(options.headless ? {} : { DISPLAY: display, ...(options.xauthority ? { XAUTHORITY: options.xauthority } : {}) }),
      },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
    });
    client = new Client({ name: 'playwright-mcp-reference', version: '1.0.0' });
    await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS, signal: budget });
    const session = client;
    const call = async (name: string, args: Record<string, unknown>): Promise<string> => {
      const result = await session.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS, signal: budget });
      const text = textOf(result.content);
      if (result.isError) throw new Error(`Playwright MCP ${name} failed: ${text}`);
      return text;
    };

    await call('browser_navigate', { url: options.pageUrl });
    const samples: number[] = [];
    let snapshot = snapshotOf(await call('browser_snapshot', {}));
    for (let round = 0; round < options.warmUp + options.rounds; round++) {
      const ref = refOf(snapshot, 'button', options.buttonName);
      const before = counterOf(snapshot);
      const started = performance.now();
      await call('browser_click', { element: options.buttonName, target: ref });
      const elapsed = performance.now() - started;
      snapshot = snapshotOf(await call('browser_snapshot', {}));
      const after = counterOf(snapshot);
      if (after !== before + 1)
        throw new Error(`Playwright MCP browser_click on "${options.buttonName}" moved the counter from ${before} to ${after}, not by one`);
      if (round >= options.warmUp) samples.push(elapsed);
    }
    return samples;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`Playwright MCP reference failed: ${reason}${stderrTail ? `\n--- server stderr (tail) ---\n${stderrTail}` : ''}`, { cause: error });
  } finally {
    // The client's close ends the transport's; the transport's own covers a failed handshake.
    await client?.close().catch(() => {});
    await transport?.close().catch(() => {});
    await rm(directory, { recursive: true, force: true });
  }
}

/** Playwright MCP's `--config`: Debian's Chromium with the host's base flags, an in-memory profile. */
function serverConfig(options: PlaywrightMcpClickOptions): unknown {
  return {
    browser: {
      browserName: 'chromium',
      isolated: true,
      launchOptions: {
        executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
        headless: options.headless,
        args: [...BASE_CHROMIUM_ARGS],
      },
    },
  };
}

/** The server's entry point, `node_modules/@playwright/mcp/cli.js` (the package exports only its index and package.json). */
function playwrightMcpCli(): string {
  return join(dirname(createRequire(import.meta.url).resolve('@playwright/mcp/package.json')), 'cli.js');
}

/** The text parts of a tool result, joined. */
function textOf(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .filter(
      (part): part is { type: 'text'; text: string } => typeof part === 'object' && part !== null && part.type === 'text' && typeof part.text === 'string',
    )
    .map((part) => part.text)
    .join('\n');
}

/** The YAML block of a `browser_snapshot` answer (`### Snapshot` then a ```yaml fence). */
function snapshotOf(text: string): string {
  const match = /```yaml\n([\s\S]*?)\n```/.exec(text);
  if (!match?.[1]) throw new Error(`Playwright MCP browser_snapshot returned no snapshot: ${text.slice(0, 500)}`);
  return match[1];
}

/** The quiet page's counter: the integer in its one paragraph (`- paragraph [ref=e4]: "3"`). */
function counterOf(snapshot: string): number {
  const paragraphs = [...walkAria(parseAriaSnapshot(snapshot))].filter((node) => node.role === 'paragraph');
  const value = paragraphs.length === 1 ? Number(paragraphs[0]?.value) : Number.NaN;
  if (!Number.isInteger(value)) throw new Error(`expected one paragraph holding the counter in the snapshot:\n${snapshot}`);
  return value;
}

/** Self-test: serves the quiet page on loopback and measures 10 headless clicks after 3 warm-up ones. */
async function selfTest(): Promise<void> {
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Quiet</title></head><body><h1>Quiet</h1><button type="button" id="b">Press me</button><p id="n">0</p><script>let n = 0; document.getElementById('b').addEventListener('click', () => { document.getElementById('n').textContent = String(++n); });</script></body></html>`;
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    response.end(page);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const pageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/quiet.html`;
    const samples = await measurePlaywrightMcpClicks({ pageUrl, buttonName: 'Press me', rounds: 10, warmUp: 3, headless: true });
    console.log('Playwright MCP browser_click on a quiet page (headless)');
    console.log(row('browser_click round trip', samples));
  } finally {
    server.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await selfTest();
