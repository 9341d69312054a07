import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { observationOf } from '../../scripts/api-client.ts';
import { stackTest } from '../support/stack-fixture.ts';

// A host connection lives as long as the call (or the live view) that opened it. On Workers the
// upgrade's time limit (HOST_CONNECT_MS, 10 s) once stayed armed on the fetch that made the
// connection, and ended the connection 10 s after it opened: a page that took longer to load, or
// a person who took longer to sign in through the live view, lost the host mid-call. Real host,
// real edge (wrangler dev), real D1; a page that answers after 12 s.

const it = stackTest({ headless: true });
const SLOW_MS = 12_000;

const slow = createServer((_request, response) => {
  setTimeout(() => {
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    response.end('<!doctype html><html lang="en"><head><title>Slow</title></head><body><h1>Finally here</h1></body></html>');
  }, SLOW_MS);
});
let slowOrigin = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
  slowOrigin = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
});
afterAll(() => {
  slow.closeAllConnections();
  slow.close();
});

describe('a host call longer than the connect time limit', () => {
  it('a navigation to a page that takes 12 s to answer succeeds: the connection outlives the 10 s its opening may take', async ({ agent, owner }) => {
    const run = (await owner.createRun({ profile_id: 'long-call', intent: 'read a slow page', origins: [slowOrigin] })).id;
    const answer = await agent.propose(run, 'browser.navigate', { url: `${slowOrigin}/` });
    expect(answer.body).toMatchObject({ state: 'succeeded' });
    expect(observationOf(answer.body).snapshot).toContain('Finally here');
    await agent.report(run, 'completed', 'read the slow page');
  });
});
