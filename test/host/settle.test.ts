import { describe, expect } from 'vitest';
import { DEFAULT_SETTLE_CONFIG } from '../../browser-host/config.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import { hostTest } from '../support/host-fixture.ts';

const test = hostTest();
/** A host whose request snapshot holds at most two requests. */
const smallSnapshotTest = hostTest({ settle: { ...DEFAULT_SETTLE_CONFIG, maxTrackedRequests: 2 } });

describe('settling (ADR-0159)', () => {
  test('a quiet page settles dom_quiet within the budget', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('quiet.html'), timeout_ms: 15_000 });
    expect(page.settle).toEqual({ outcome: 'dom_quiet', elapsed_ms: expect.any(Number), pending_at_entry: expect.any(Number), overflow: false });
    // It waited the 300 ms quiet period and did not claim quiet before it.
    expect(page.settle.elapsed_ms).toBeGreaterThanOrEqual(300);
  });

  test('a page whose DOM mutates every 50 ms settles bound_expired by the deadline', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('clock.html'), timeout_ms: 15_000 });
    expect(page.settle).toMatchObject({ outcome: 'bound_expired', expired_by: 'deadline', overflow: false });
    // It used the whole 2,000 ms budget (less a few ms of clock rounding).
    expect(page.settle.elapsed_ms).toBeGreaterThanOrEqual(1_950);
    // Generous upper bound: only that settling stopped at its budget, not at the operation's.
    expect(page.settle.elapsed_ms).toBeLessThan(6_000);
  });

  test('a slow image does not hold settling back: readiness is not the load event', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('slow-image.html'), timeout_ms: 15_000 });
    expect(page.settle.outcome).toBe('dom_quiet');
    expect(page.snapshot).toContain('heading "Slow image"');
  });

  test('a new document during settling restarts readiness inside the same budget', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('redirect.html'), timeout_ms: 15_000 });
    expect(page.url).toBe(fixtures.url('quiet.html'));
    expect(page.title).toBe('Quiet');
    expect(page.settle.outcome).toBe('dom_quiet');
  });

  test('an action on a ticking page reports bound_expired, and a plain observe claims no stability', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('clock.html'), timeout_ms: 15_000 });
    const heading = refOf(page.snapshot, 'heading', 'Ticking clock');
    const after = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: heading },
      timeout_ms: 15_000,
    });
    expect(after.settle).toMatchObject({ outcome: 'bound_expired', expired_by: 'deadline' });
    const observed = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(observed.settle).toEqual({ outcome: 'not_waited', elapsed_ms: 0, pending_at_entry: 0, overflow: false });
  });

  smallSnapshotTest('more requests than the snapshot cap is an overflow, reported bound_expired', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('many-requests.html'), timeout_ms: 15_000 });
    const button = refOf(page.snapshot, 'button', 'Start requests');
    const after = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: button },
      timeout_ms: 15_000,
    });
    expect(after.settle).toMatchObject({ outcome: 'bound_expired', expired_by: 'overflow', overflow: true, pending_at_entry: 2 });
  });
});
