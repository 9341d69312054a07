import { describe, expect } from 'vitest';
import type { Observation } from '../../shared/observation.ts';
import { hostTest } from '../support/host-fixture.ts';

/** Small caps so the 120-item list needs several windows. */
const test = hostTest({ window: { maxNodes: 50, maxBytes: 32 * 1024 } });

describe('observation', () => {
  test('navigate returns an observation with aria refs, and each full capture is a new revision', async ({ client, lease, fixtures }) => {
    const first = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('button.html'), timeout_ms: 15_000 });
    expect(first.url).toBe(fixtures.url('button.html'));
    expect(first.title).toBe('Effects');
    expect(first.snapshot).toMatch(/button "Record click" \[ref=e\d+\]/);
    expect(first.window).toEqual({ scope: { start_node: 0, end_node: expect.any(Number), total_nodes: expect.any(Number) }, truncated: false });
    expect(first.settle.outcome).toBe('dom_quiet');

    const second = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(second.revision).toBe(first.revision + 1);
    expect(second.settle).toEqual({ outcome: 'not_waited', elapsed_ms: 0, pending_at_entry: 0, overflow: false });

    const third = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(third.revision).toBe(second.revision + 1);
  });

  test('a truncated window continues where it stopped, over the same revision, without recapturing', async ({ client, lease, fixtures }) => {
    const first = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('long.html'), timeout_ms: 15_000 });
    expect(first.window.truncated).toBe(true);
    expect(first.window.scope).toEqual({ start_node: 0, end_node: 50, total_nodes: expect.any(Number) });
    expect(first.snapshot.split('\n')).toHaveLength(50);
    const total = first.window.scope.total_nodes;
    expect(total).toBeGreaterThan(120);

    const windows: Observation[] = [first];
    let last = first;
    while (last.window.continuation !== undefined) {
      last = await client.call('page.observe', { lease_id: lease.lease_id, continuation: last.window.continuation, timeout_ms: 15_000 });
      windows.push(last);
    }
    expect(windows.map((w) => w.revision)).toEqual(windows.map(() => first.revision));
    expect(windows.map((w) => w.window.scope.start_node)).toEqual([0, 50, 100]);
    expect(last.window).toEqual({ scope: { start_node: 100, end_node: total, total_nodes: total }, truncated: false });
    const text = windows.map((w) => w.snapshot).join('\n');
    expect(text).toContain('Item number 1\n');
    expect(text).toContain('Item number 120');
    expect(text.split('\n')).toHaveLength(total);
  });

  test('a forged or altered continuation cursor is invalid_params', async ({ client, lease, fixtures }) => {
    const first = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('long.html'), timeout_ms: 15_000 });
    const cursor = first.window.continuation ?? '';
    const [payload, mac] = cursor.split('.');
    const altered = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()), s: 0 })).toString('base64url');
    for (const forged of [`${altered}.${mac}`, 'bm90LWEtY3Vyc29y', `${payload}.AAAAAAAAAAAAAAAAAAAAAA`]) {
      const response = await client.request('page.observe', { lease_id: lease.lease_id, continuation: forged, timeout_ms: 5_000 });
      expect(response).toMatchObject({ error: { code: 'invalid_params' } });
    }
  });

  test('a continuation of a revision that is no longer the latest is stale_revision', async ({ client, lease, fixtures }) => {
    const first = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('long.html'), timeout_ms: 15_000 });
    await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    const response = await client.request('page.observe', { lease_id: lease.lease_id, continuation: first.window.continuation, timeout_ms: 5_000 });
    expect(response).toMatchObject({ error: { code: 'stale_revision' } });
  });

  test('only http and https URLs are navigated', async ({ client, lease }) => {
    for (const url of ['file:///etc/passwd', 'chrome://settings', 'javascript:alert(1)', 'data:text/html,hi', 'not a url']) {
      const response = await client.request('page.navigate', { lease_id: lease.lease_id, url, timeout_ms: 5_000 });
      expect(response).toMatchObject({ error: { code: 'invalid_params' } });
    }
  });

  test('a URL carrying credentials is refused by the host itself, nothing loaded', async ({ client, lease, fixtures }) => {
    const withCredentials = fixtures.url('quiet.html').replace('http://', 'http://user:secret@');
    const response = await client.request('page.navigate', { lease_id: lease.lease_id, url: withCredentials, timeout_ms: 5_000 });
    expect(response).toMatchObject({ error: { code: 'invalid_params', message: expect.stringContaining('credentials') } });
  });

  test('a navigation that cannot load is navigation_failed, and the next navigation works', async ({ client, lease, fixtures }) => {
    const response = await client.request('page.navigate', { lease_id: lease.lease_id, url: 'http://127.0.0.1:9/', timeout_ms: 10_000 });
    expect(response).toMatchObject({ error: { code: 'navigation_failed' } });
    // Chromium's error text would tell refused, reset and unresolvable apart (a port scan): never echoed.
    expect(JSON.stringify(response)).not.toMatch(/net::|ERR_/);
    const next = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('quiet.html'), timeout_ms: 15_000 });
    expect(next.title).toBe('Quiet');
  });
});
