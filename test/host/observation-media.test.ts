import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect } from 'vitest';
import { mediaTypeOf, safeFileName } from '../../browser-host/page/downloads.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import type { HostObservation } from '../../shared/authentication.ts';
import { MAX_OBSERVATION_SCREENSHOT_BYTES, MAX_RUN_FILE_BYTES, RunFileName, type WireDownload } from '../../shared/run-files.ts';
import { downloadBody, startFixtureServer } from '../support/fixture-server.ts';
import type { HostClient } from '../support/host-client.ts';
import { acquire, hostTest } from '../support/host-fixture.ts';
import { until } from '../support/until.ts';

const test = hostTest({ window: { maxNodes: 50, maxBytes: 32 * 1024 } });

/** The test browser's viewport, in CSS px (Playwright's default). */
const VIEWPORT = { width: 1280, height: 720 };

/** Width and height from a JPEG's start-of-frame marker, read here independently of the host's code. */
function jpegFrameSize(jpeg: Buffer): { width: number; height: number } | undefined {
  for (let offset = 2; offset + 9 < jpeg.length; offset += 2 + jpeg.readUInt16BE(offset + 2)) {
    const marker = jpeg[offset + 1]!;
    if (jpeg[offset] !== 0xff) return undefined;
    if (marker >= 0xc0 && marker <= 0xc2) return { height: jpeg.readUInt16BE(offset + 5), width: jpeg.readUInt16BE(offset + 7) };
  }
  return undefined;
}

/** Observes until the downloads reported since the test began include `count` entries; answers them all. */
async function downloadsReported(client: HostClient, leaseId: string, count: number): Promise<WireDownload[]> {
  const reported: WireDownload[] = [];
  await until(async () => {
    const observed: HostObservation = await client.call('page.observe', { lease_id: leaseId, timeout_ms: 15_000 });
    reported.push(...(observed.downloaded_files ?? []));
    return reported.length >= count;
  }, `${count} downloads reported`);
  return reported;
}

/** The files in the host download directories (one per browser, `host-downloads-*` under the OS temporary directory). */
async function filesInDownloadDirectories(): Promise<string[]> {
  const dirs = (await readdir(tmpdir())).filter((name) => name.startsWith('host-downloads-'));
  const files = await Promise.all(dirs.map((dir) => readdir(path.join(tmpdir(), dir)).catch(() => [] as string[])));
  return files.flat();
}

describe('pictures for the agent', () => {
  test('an observe with screenshot carries a JPEG of the viewport, in CSS px, of the revision it answers', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('screenshot/target.html'), timeout_ms: 15_000 });
    const observed = await client.call('page.observe', { lease_id: lease.lease_id, screenshot: true, timeout_ms: 15_000 });
    expect(observed.revision).toBe(page.revision + 1);
    const picture = observed.viewport_jpeg!;
    const jpeg = Buffer.from(picture.data_base64, 'base64');
    expect(picture.mime_type).toBe('image/jpeg');
    expect([...jpeg.subarray(0, 2)]).toEqual([0xff, 0xd8]);
    expect([...jpeg.subarray(-2)]).toEqual([0xff, 0xd9]);
    expect(jpeg.length).toBeLessThanOrEqual(MAX_OBSERVATION_SCREENSHOT_BYTES);
    expect(jpegFrameSize(jpeg)).toEqual(VIEWPORT);
    expect({ width: picture.width, height: picture.height }).toEqual(VIEWPORT);
    // The answered revision is still the page's latest: nothing else was captured in between.
    const reference = refOf(observed.snapshot, 'button', 'Send payment');
    const fresh = await client.call('page.screenshot', { lease_id: lease.lease_id, revision: observed.revision, reference, timeout_ms: 10_000 });
    expect(fresh.revision).toBe(observed.revision);
  });

  test('the picture shows the state of its revision: the same pixels give the same JPEG, an act that repaints gives another', async ({
    client,
    lease,
    fixtures,
  }) => {
    await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('screenshot/target.html'), timeout_ms: 15_000 });
    const before = await client.call('page.observe', { lease_id: lease.lease_id, screenshot: true, timeout_ms: 15_000 });
    const again = await client.call('page.observe', { lease_id: lease.lease_id, screenshot: true, timeout_ms: 15_000 });
    expect(again.viewport_jpeg!.data_base64).toBe(before.viewport_jpeg!.data_base64);
    await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: again.revision, reference: refOf(again.snapshot, 'button', 'Send payment') },
      timeout_ms: 15_000,
    });
    const after = await client.call('page.observe', { lease_id: lease.lease_id, screenshot: true, timeout_ms: 15_000 });
    expect(after.viewport_jpeg!.data_base64).not.toBe(before.viewport_jpeg!.data_base64);
  });

  test('a plain observe and a navigation carry no picture; a continuation may not ask for one', async ({ client, lease, fixtures }) => {
    // Long enough that the first window (50 nodes here) is cut and continues.
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('long.html'), timeout_ms: 15_000 });
    expect(page.viewport_jpeg).toBeUndefined();
    const observed = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(observed.viewport_jpeg).toBeUndefined();
    expect(observed.window.continuation).toBeDefined();
    const refused = await client.request('page.observe', {
      lease_id: lease.lease_id,
      continuation: observed.window.continuation,
      screenshot: true,
      timeout_ms: 15_000,
    });
    expect(refused).toMatchObject({ error: { code: 'invalid_params' } });
    const next = await client.call('page.observe', { lease_id: lease.lease_id, continuation: observed.window.continuation!, timeout_ms: 15_000 });
    expect(next.viewport_jpeg).toBeUndefined();
  });
});

describe('downloads', () => {
  test('a downloaded file is reported once in a later observation and read back exactly once', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('download/links.html'), timeout_ms: 15_000 });
    const clicked = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'link', 'Download the report') },
      timeout_ms: 15_000,
    });
    // The page stays where it was: a download is no navigation.
    expect(clicked.url).toBe(fixtures.url('download/links.html'));
    const reported = [...(clicked.downloaded_files ?? []), ...(await downloadsReported(client, lease.lease_id, 1 - (clicked.downloaded_files?.length ?? 0)))];
    expect(reported).toEqual([{ download_id: expect.stringMatching(/^dl_/), file_name: 'report.csv', mime_type: 'text/csv', bytes: 5000, state: 'saved' }]);
    // Reported once: the next observation has none.
    const later = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(later.downloaded_files).toBeUndefined();
    const read = await client.call('page.download', { lease_id: lease.lease_id, download_id: reported[0]!.download_id, timeout_ms: 10_000 });
    expect(read).toMatchObject(reported[0]!);
    expect(Buffer.from(read.data_base64, 'base64').equals(downloadBody(5000))).toBe(true);
    const twice = await client.request('page.download', { lease_id: lease.lease_id, download_id: reported[0]!.download_id, timeout_ms: 10_000 });
    expect(twice).toMatchObject({ error: { code: 'invalid_params' } });
    const unknown = await client.request('page.download', { lease_id: lease.lease_id, download_id: 'dl_neverissued', timeout_ms: 10_000 });
    expect(unknown).toMatchObject({ error: { code: 'invalid_params' } });
  });

  test("navigating to a file's URL downloads it and leaves the page where it was", async ({ client, lease, fixtures }) => {
    await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('download/links.html'), timeout_ms: 15_000 });
    const navigated = await client.call('page.navigate', {
      lease_id: lease.lease_id,
      url: fixtures.url('download?bytes=700&name=direct.txt'),
      timeout_ms: 15_000,
    });
    expect(navigated.url).toBe(fixtures.url('download/links.html'));
    const reported = [
      ...(navigated.downloaded_files ?? []),
      ...(await downloadsReported(client, lease.lease_id, 1 - (navigated.downloaded_files?.length ?? 0))),
    ];
    expect(reported).toEqual([expect.objectContaining({ file_name: 'direct.txt', mime_type: 'application/octet-stream', bytes: 700, state: 'saved' })]);
    const read = await client.call('page.download', { lease_id: lease.lease_id, download_id: reported[0]!.download_id, timeout_ms: 10_000 });
    expect(Buffer.from(read.data_base64, 'base64').equals(downloadBody(700))).toBe(true);
  });

  test('a download over the size limit is reported too_large and not kept', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('download/links.html'), timeout_ms: 15_000 });
    const filesBefore = await filesInDownloadDirectories();
    const clicked = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'link', 'Download the archive') },
      timeout_ms: 15_000,
    });
    const reported = [...(clicked.downloaded_files ?? []), ...(await downloadsReported(client, lease.lease_id, 1 - (clicked.downloaded_files?.length ?? 0)))];
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ file_name: 'huge.bin', state: 'too_large' });
    expect(reported[0]!.bytes).toBeGreaterThan(MAX_RUN_FILE_BYTES);
    const read = await client.request('page.download', { lease_id: lease.lease_id, download_id: reported[0]!.download_id, timeout_ms: 10_000 });
    expect(read).toMatchObject({ error: { code: 'invalid_params' } });
    // No file of it is left (other files may belong to other hosts on this machine).
    expect((await filesInDownloadDirectories()).filter((file) => !filesBefore.includes(file))).toEqual([]);
  });

  test('a download that grows past the size limit while it is received is cancelled there: its server sees it dropped', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('download/links.html'), timeout_ms: 15_000 });
    const clicked = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'link', 'Download the slow archive') },
      timeout_ms: 15_000,
    });
    // 8 MiB in 64 KiB chunks 20 ms apart: about 2.6 s to send, cancelled once past 2 MiB.
    const reported = [...(clicked.downloaded_files ?? []), ...(await downloadsReported(client, lease.lease_id, 1 - (clicked.downloaded_files?.length ?? 0)))];
    expect(reported).toEqual([expect.objectContaining({ file_name: 'endless.bin', state: 'too_large' })]);
    expect(reported[0]!.bytes).toBeGreaterThan(MAX_RUN_FILE_BYTES);
    expect(reported[0]!.bytes).toBeLessThan(8 * 1024 * 1024);
    await until(() => fixtures.hits('download_dropped') === 1, 'the server to see the download dropped');
  });

  test("a download from outside the run's origins is refused like a navigation there, and nothing is kept", async ({ client, fixtures }) => {
    const elsewhere = await startFixtureServer();
    const own = await acquire(client, 'confined', 60_000, undefined, [fixtures.origin]);
    try {
      const url = `${fixtures.url('download/links.html')}?elsewhere=${encodeURIComponent(elsewhere.origin)}`;
      const page = await client.call('page.navigate', { lease_id: own.lease_id, url, timeout_ms: 15_000 });
      const clicked = await client.call('page.act', {
        lease_id: own.lease_id,
        action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'link', 'Download from elsewhere') },
        timeout_ms: 15_000,
      });
      const later = await client.call('page.observe', { lease_id: own.lease_id, timeout_ms: 15_000 });
      expect([...(clicked.blocked ?? []), ...(later.blocked ?? [])]).toContainEqual(
        expect.objectContaining({ origin: elsewhere.origin, kind: 'navigation', reason: 'outside_run_origins' }),
      );
      expect([...(clicked.downloaded_files ?? []), ...(later.downloaded_files ?? [])]).toEqual([]);
    } finally {
      await client.call('lease.release', { lease_id: own.lease_id });
      await elsewhere.close();
    }
  });

  test("a new lease gets none of the last lease's downloads, and their files are deleted", async ({ client, fixtures }) => {
    const first = await acquire(client, 'handover', 60_000, undefined, [fixtures.origin]);
    const page = await client.call('page.navigate', { lease_id: first.lease_id, url: fixtures.url('download/links.html'), timeout_ms: 15_000 });
    const filesBefore = await filesInDownloadDirectories();
    const clicked = await client.call('page.act', {
      lease_id: first.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'link', 'Download the report') },
      timeout_ms: 15_000,
    });
    const reported = [...(clicked.downloaded_files ?? []), ...(await downloadsReported(client, first.lease_id, 1 - (clicked.downloaded_files?.length ?? 0)))];
    expect(reported[0]).toMatchObject({ state: 'saved' });
    const kept = (await filesInDownloadDirectories()).filter((file) => !filesBefore.includes(file));
    expect(kept).toHaveLength(1);
    await client.call('lease.release', { lease_id: first.lease_id });
    const second = await acquire(client, 'handover', 60_000, undefined, [fixtures.origin]);
    try {
      const gone = await client.request('page.download', { lease_id: second.lease_id, download_id: reported[0]!.download_id, timeout_ms: 10_000 });
      expect(gone).toMatchObject({ error: { code: 'invalid_params' } });
      expect(await filesInDownloadDirectories()).not.toContain(kept[0]);
    } finally {
      await client.call('lease.release', { lease_id: second.lease_id });
    }
  });

  test("a download's name is the page's suggestion cut to a safe file name, its type the response's without parameters", () => {
    expect(safeFileName('reports/2026\\q4\u0007.csv')).toBe('reports_2026_q4.csv');
    // Characters that would make the approval read otherwise are dropped, not the whole name.
    expect(safeFileName('invoice\u202efdp.exe')).toBe('invoicefdp.exe');
    expect(safeFileName('a\u0085b\u2028c\u200b\u2066.txt')).toBe('abc.txt');
    for (const nothing of ['', '.', '..', '\u0001\u0002']) expect(safeFileName(nothing)).toBe('download');
    const long = safeFileName(`${'a'.repeat(254)}😀😀.txt`);
    expect(long).toBe('a'.repeat(254));
    expect(RunFileName.safeParse(safeFileName(`${'😀'.repeat(200)}`)).success).toBe(true);
    expect(mediaTypeOf('Text/CSV; charset=utf-8')).toBe('text/csv');
    expect(mediaTypeOf('not a type')).toBeUndefined();
    expect(mediaTypeOf(undefined)).toBeUndefined();
  });
});
