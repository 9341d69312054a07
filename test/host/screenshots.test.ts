import { describe, expect } from 'vitest';
import { parseHostConfig } from '../../browser-host/config.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import { MAX_SCREENSHOT_BYTES } from '../../shared/protocol.ts';
import { acquire, hostTest, TEST_SECRET } from '../support/host-fixture.ts';

const test = hostTest();

/** The fixture's target, in viewport CSS px (test/fixtures/screenshot/target.html). */
const TARGET_BOX = { x: 240, y: 180, width: 200, height: 80 };

function isJpeg(base64: string): boolean {
  const bytes = Buffer.from(base64, 'base64');
  return bytes.length > 100 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes.at(-2) === 0xff && bytes.at(-1) === 0xd9;
}

describe('screenshots for the owner', () => {
  test('an act shelves a JPEG of the revision it produced, served by revision without the box', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('screenshot/target.html'), timeout_ms: 15_000 });
    // Asked while it is still the latest revision: the navigation's picture, once taken (a write
    // that began before it was taken would have dropped it).
    await client.call('page.screenshot', { lease_id: lease.lease_id, revision: page.revision, timeout_ms: 10_000 });
    const clicked = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Send payment') },
      timeout_ms: 15_000,
    });
    // The page moves on (a read), yet the act's picture is still served: it was kept.
    const later = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(later.revision).toBe(clicked.revision + 1);
    for (const revision of [page.revision, clicked.revision]) {
      const shot = await client.call('page.screenshot', { lease_id: lease.lease_id, revision, timeout_ms: 10_000 });
      expect(shot).toMatchObject({ revision, width: 1280, height: 720, box: null });
      expect(isJpeg(shot.jpeg_base64)).toBe(true);
      expect(Buffer.from(shot.jpeg_base64, 'base64').length).toBeLessThanOrEqual(MAX_SCREENSHOT_BYTES);
    }
  });

  test("with a reference the picture is fresh and carries the element's box in viewport CSS px", async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('screenshot/target.html'), timeout_ms: 15_000 });
    const observed = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    const reference = refOf(observed.snapshot, 'button', 'Send payment');
    const shot = await client.call('page.screenshot', { lease_id: lease.lease_id, revision: observed.revision, reference, timeout_ms: 10_000 });
    expect(shot.revision).toBe(observed.revision);
    expect(shot.box).not.toBeNull();
    for (const key of ['x', 'y', 'width', 'height'] as const) expect(Math.abs(shot.box![key] - TARGET_BOX[key])).toBeLessThan(1);
    // A reference that matches nothing gives a picture without a box, not a failure.
    const none = await client.call('page.screenshot', { lease_id: lease.lease_id, revision: observed.revision, reference: 'e999', timeout_ms: 10_000 });
    expect(none.box).toBeNull();
    // An older revision that was only read (never shelved) cannot be pictured any more.
    expect(page.revision).toBeLessThan(observed.revision);
    const readOnly = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    const stale = await client.request('page.screenshot', { lease_id: lease.lease_id, revision: observed.revision, timeout_ms: 10_000 });
    expect(readOnly.revision).toBe(observed.revision + 1);
    expect(stale).toMatchObject({ error: { code: 'stale_revision' } });
  });

  test("a new lease on the profile gets none of the last lease's pictures", async ({ client, fixtures }) => {
    const first = await acquire(client, 'handover', 60_000, undefined, [fixtures.origin]);
    const page = await client.call('page.navigate', { lease_id: first.lease_id, url: fixtures.url('screenshot/target.html'), timeout_ms: 15_000 });
    await client.call('page.screenshot', { lease_id: first.lease_id, revision: page.revision, timeout_ms: 10_000 });
    await client.call('lease.release', { lease_id: first.lease_id });
    const second = await acquire(client, 'handover', 60_000, undefined, [fixtures.origin]);
    try {
      const response = await client.request('page.screenshot', { lease_id: second.lease_id, revision: page.revision, timeout_ms: 10_000 });
      expect(response).toMatchObject({ error: { code: 'stale_revision' } });
      const gone = await client.request('page.screenshot', { lease_id: first.lease_id, revision: page.revision, timeout_ms: 10_000 });
      expect(gone).toMatchObject({ error: { code: 'lease_lost' } });
    } finally {
      await client.call('lease.release', { lease_id: second.lease_id });
    }
  });

  test('screenshots are on by default at quality 60 and can be turned off or set', () => {
    const base = { HOST_SHARED_SECRET: TEST_SECRET };
    expect(parseHostConfig(base).screenshots).toEqual({ enabled: true, quality: 60 });
    expect(parseHostConfig({ ...base, HOST_SCREENSHOTS: '0', HOST_SCREENSHOT_QUALITY: '40' }).screenshots).toEqual({ enabled: false, quality: 40 });
    expect(() => parseHostConfig({ ...base, HOST_SCREENSHOT_QUALITY: '100' })).toThrow(/HOST_SCREENSHOT_QUALITY/);
  });
});
