import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

// `npm run memory:evaluate` against hostile surroundings (issue 34): a provider module that does
// not load is a usage error (exit 2), not an unreachable edge; an edge that never answers or
// answers something that is not the API ends the command with exit 3 within a bounded time.

const root = join(import.meta.dirname, '..', '..', '..');

function evaluate(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['scripts/toolchain.mjs', 'tsx', 'scripts/memory-evaluate.ts', ...args],
      { cwd: root, timeout: 120_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr, ms: Date.now() - started });
      },
    );
  });
}

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A loopback HTTP server answering every request with `handler`; its base URL. */
async function edgeAnswering(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('npm run memory:evaluate in hostile surroundings', () => {
  it('answers a provider module that throws as it loads, or does not exist, with exit 2 and what went wrong', async () => {
    const throwing = await evaluate(['--provider-module', 'test/fixtures/memory/throwing-module-provider.ts']);
    expect(throwing.code).toBe(2);
    expect(throwing.stderr).toContain('this provider module cannot load');
    expect(throwing.stderr).not.toContain('no answer from the API');
    const missing = await evaluate(['--provider-module', 'test/fixtures/memory/no-such-provider.ts']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no-such-provider.ts');
  });

  it('gives up on an edge that never answers, with exit 3, within a bounded time', async () => {
    const edge = await edgeAnswering(() => {});
    const run = await evaluate(['--edge', edge, '--token', 'operator-token']);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`no answer from the API at ${edge}`);
    expect(run.ms).toBeLessThan(60_000);
  });

  it('answers an edge that answers something that is not the API with exit 3', async () => {
    const edge = await edgeAnswering((_, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end('<html>not the API</html>');
    });
    const run = await evaluate(['--edge', edge, '--token', 'operator-token']);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`no answer from the API at ${edge}`);
  });
});
