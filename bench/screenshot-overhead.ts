/**
 * `npm run bench` (issue 15): what the owner's screenshots cost the agent. Two browser hosts in
 * this process, the same settings but `HOST_SCREENSHOTS` on and off, driven over the real wire
 * (the edge's side of it) in alternating rounds on the same fixture page (a click that turns a
 * button green and posts an effect):
 *
 * - the act's answer, on against off, sent the moment the navigation before it answered (so
 *   while that navigation's picture is being taken: the worst case): nothing waits for a
 *   picture, so the difference is what taking it costs the agent (target: at most 30 ms at the
 *   median);
 * - a read, and a read then a write, sent the moment an act answered (they run while its picture
 *   is being taken; a picture a write overtook is dropped, never kept showing that write's
 *   input). An agent's model takes seconds between calls, so these are worst cases too;
 * - the edge's background fetch of the kept picture (`page.screenshot`), and its size.
 *
 * Figures, not assertions; headless Chromium on loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseHostConfig } from '../browser-host/config.ts';
import { type BrowserHost, startBrowserHost } from '../browser-host/host.ts';
import { refOf } from '../scripts/aria-refs.ts';
import { startFixtureServer } from '../test/support/fixture-server.ts';
import { connectHost, type HostClient } from '../test/support/host-client.ts';
import { row, summary } from './stats.ts';

const ROUNDS = 20;
const WARM_UP = 3;
const SECRET = 'bench-shared-secret-of-at-least-32-bytes!!';
const TARGET_MS = 30;

const site = await startFixtureServer();
const scratch = mkdtempSync(join(tmpdir(), 'bench-screenshots-'));

interface Side {
  readonly name: 'on' | 'off';
  readonly host: BrowserHost;
  readonly client: HostClient;
  readonly leaseId: string;
  readonly act: number[];
  readonly readAfter: number[];
  readonly writeAfter: number[];
  readonly fetch: number[];
  readonly bytes: number[];
}

async function side(name: 'on' | 'off'): Promise<Side> {
  const config = parseHostConfig({
    HOST_SHARED_SECRET: SECRET,
    HOST_PORT: '0',
    HOST_HEADLESS: '1',
    HOST_PROFILES_DIR: join(scratch, name),
    HOST_SCREENSHOTS: name === 'on' ? '1' : '0',
    CHROMIUM_PATH: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  });
  const host = await startBrowserHost(config);
  const client = await connectHost(host.url, SECRET);
  const lease = await client.call('lease.acquire', { run_id: `bench-${name}`, profile_id: `bench-${name}`, origins: [site.origin], ttl_ms: 600_000 });
  return { name, host, client, leaseId: lease.lease_id, act: [], readAfter: [], writeAfter: [], fetch: [], bytes: [] };
}

/** One round: load the page, then act; then, right behind the answer, a read; again, a write. */
async function round(s: Side, record: boolean): Promise<void> {
  const wire = { lease_id: s.leaseId, timeout_ms: 15_000 };
  const timed = async <T>(work: () => Promise<T>, into: number[]): Promise<T> => {
    const started = performance.now();
    const result = await work();
    if (record) into.push(performance.now() - started);
    return result;
  };
  const click = (page: { revision: number; snapshot: string }) =>
    s.client.call('page.act', { ...wire, action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Send payment') } });

  let page = await s.client.call('page.navigate', { ...wire, url: site.url('screenshot/target.html') });
  const acted = await timed(() => click(page), s.act);
  await timed(() => s.client.call('page.observe', wire), s.readAfter);
  if (s.name === 'on') {
    const picture = await timed(() => s.client.call('page.screenshot', { ...wire, revision: acted.revision }), s.fetch);
    if (record) s.bytes.push(Math.round((picture.jpeg_base64.length * 3) / 4));
  }
  page = await s.client.call('page.navigate', { ...wire, url: site.url('screenshot/target.html') });
  await click(page);
  await timed(() => s.client.call('page.observe', wire).then((read) => click(read)), s.writeAfter);
}

const sides = [await side('on'), await side('off')];
try {
  for (let i = 0; i < WARM_UP + ROUNDS; i++) {
    // Alternate which side goes first, so drift of the machine falls on both alike.
    for (const s of i % 2 === 0 ? sides : [...sides].reverse()) await round(s, i >= WARM_UP);
  }
  const [on, off] = sides as [Side, Side];
  const delta = summary(on.act).median - summary(off.act).median;
  console.log(`\nScreenshots for the owner (issue 15): ${ROUNDS} rounds per side after ${WARM_UP} warm-up, headless Chromium, loopback`);
  console.log(row('act answer, screenshots off (reference)', off.act));
  console.log(row('act answer, screenshots on', on.act));
  console.log(
    `  delay of the act's answer, medians: ${delta.toFixed(1)} ms (target at most ${TARGET_MS} ms) · ratio on / off ${(summary(on.act).median / summary(off.act).median).toFixed(2)}x`,
  );
  console.log(row('read right behind the act, off', off.readAfter));
  console.log(row('read right behind the act, on', on.readAfter));
  console.log(row('read + write right behind an act, off', off.writeAfter));
  console.log(row('read + write right behind an act, on', on.writeAfter));
  console.log('  (calls right behind an answer run while its picture is taken; an agent between calls waits far longer)');
  console.log(row("edge's background fetch of the picture", on.fetch));
  console.log(`  picture size: median ${(summary(on.bytes).median / 1024).toFixed(1)} KiB (1280 x 720 CSS px, JPEG quality 60; bound 256 KiB)`);
} finally {
  for (const s of sides) {
    s.client.close();
    await s.host.close();
  }
  await site.close();
  rmSync(scratch, { recursive: true, force: true });
}
