import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { Observation, SettleReport } from '../../shared/observation.ts';
import type { FixtureServer } from '../support/fixture-server.ts';
import type { HostClient } from '../support/host-client.ts';
import { hostTest } from '../support/host-fixture.ts';
import { AT_BUDGET, type ElapsedWindow, OVERFLOW_WINDOW, QUIET_MS, quietAfter } from '../support/settle-windows.ts';

// Settling (ADR-0159) in real Chromium on pages that misbehave the way real sites do, one fixture
// each (test/fixtures/settle/). Each test asserts the outcome and that elapsed_ms lies in the
// window the rules imply for that page; the tolerances live in test/support/settle-windows.ts.

const test = hostTest();

/** Loads a settle fixture, starting from the settled quiet page so no earlier traffic is in flight. */
async function open(client: HostClient, leaseId: string, fixtures: FixtureServer, fixture: string): Promise<Observation> {
  await client.call('page.navigate', { lease_id: leaseId, url: fixtures.url('settle/quiet.html'), timeout_ms: 20_000 });
  return client.call('page.navigate', { lease_id: leaseId, url: fixtures.url(`settle/${fixture}`), timeout_ms: 20_000 });
}

/** Clicks the control named `name` of role `role` in `page`'s observation. */
function click(client: HostClient, leaseId: string, page: Observation, role: string, name: string): Promise<Observation> {
  return client.call('page.act', {
    lease_id: leaseId,
    action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, role, name) },
    timeout_ms: 20_000,
  });
}

function expectElapsedIn(settle: SettleReport, window: ElapsedWindow): void {
  expect(settle.elapsed_ms, `elapsed_ms in [${window.min}, ${window.max}]`).toBeGreaterThanOrEqual(window.min);
  expect(settle.elapsed_ms, `elapsed_ms in [${window.min}, ${window.max}]`).toBeLessThanOrEqual(window.max);
}

describe('settling after a navigation (ADR-0159)', () => {
  test('a quiet page is dom_quiet after the 300 ms quiet period', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'quiet.html');
    expect(page.settle).toEqual({ outcome: 'dom_quiet', elapsed_ms: expect.any(Number), pending_at_entry: 0, overflow: false });
    expectElapsedIn(page.settle, quietAfter(QUIET_MS));
  });

  test('a delayed SPA is dom_quiet only after the data its startup script fetches (800 ms) has rendered', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'delayed-spa.html');
    // The script and its fetch, both started while the document loaded, are the request set.
    expect(page.settle).toEqual({ outcome: 'dom_quiet', elapsed_ms: expect.any(Number), pending_at_entry: 2, overflow: false });
    expectElapsedIn(page.settle, quietAfter(800 + QUIET_MS));
    expect(page.snapshot).toContain('heading "Dashboard"');
    expect(page.snapshot).toContain('Value 42');
  });

  test('a page that polls every 100 ms without touching the DOM is dom_quiet: polls started later never join the set', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'polling.html');
    // Polls take 400 ms each, so several are always in flight; none held settling back.
    expect(page.settle).toMatchObject({ outcome: 'dom_quiet', overflow: false });
    expect(page.settle.expired_by).toBeUndefined();
    expectElapsedIn(page.settle, quietAfter(QUIET_MS));
  });

  test('a page that rewrites its DOM on every poll is bound_expired at the 2,000 ms budget', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'polling-render.html');
    expect(page.settle).toMatchObject({ outcome: 'bound_expired', expired_by: 'deadline', overflow: false });
    expectElapsedIn(page.settle, AT_BUDGET);
    expect(page.snapshot).toMatch(/Polls: \d+/);
  });

  test('a server-sent event stream that never ends leaves the set when its headers arrive (600 ms)', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'event-stream.html');
    expect(page.settle).toEqual({ outcome: 'dom_quiet', elapsed_ms: expect.any(Number), pending_at_entry: 1, overflow: false });
    expectElapsedIn(page.settle, quietAfter(600 + QUIET_MS));
    expect(page.snapshot).toContain('Stream open');
  });

  test('300 fetches at once overflow the 256-request set: bound_expired by overflow, without waiting for them', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'fetch-burst.html?on-load=1');
    expect(page.settle).toEqual({ outcome: 'bound_expired', expired_by: 'overflow', elapsed_ms: expect.any(Number), pending_at_entry: 256, overflow: true });
    expectElapsedIn(page.settle, OVERFLOW_WINDOW);
  });

  test('an image that never finishes is not tracked: dom_quiet after the quiet period', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'slow-image.html');
    expect(page.settle).toEqual({ outcome: 'dom_quiet', elapsed_ms: expect.any(Number), pending_at_entry: 0, overflow: false });
    expectElapsedIn(page.settle, quietAfter(QUIET_MS));
    expect(page.snapshot).toContain('heading "Slow image"');
  });

  test('a constantly ticking clock is bound_expired at the 2,000 ms budget', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'ticking-clock.html');
    expect(page.settle).toEqual({ outcome: 'bound_expired', expired_by: 'deadline', elapsed_ms: expect.any(Number), pending_at_entry: 0, overflow: false });
    expectElapsedIn(page.settle, AT_BUDGET);
  });

  test('a request that fails (after 500 ms) leaves the set: dom_quiet, not bound_expired', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'failing-request.html');
    expect(page.settle).toEqual({ outcome: 'dom_quiet', elapsed_ms: expect.any(Number), pending_at_entry: 1, overflow: false });
    expectElapsedIn(page.settle, quietAfter(500 + QUIET_MS));
    expect(page.snapshot).toContain('Could not load');
  });

  test('a new document during settling clears the set and restarts readiness inside the same budget', async ({ client, lease, fixtures }) => {
    // redirect.html replaces itself after 100 ms by the delayed SPA, whose own fetch takes 800 ms.
    const page = await open(client, lease.lease_id, fixtures, 'redirect.html');
    expect(page.url).toBe(fixtures.url('settle/delayed-spa.html'));
    expect(page.settle).toEqual({ outcome: 'dom_quiet', elapsed_ms: expect.any(Number), pending_at_entry: 2, overflow: false });
    expectElapsedIn(page.settle, quietAfter(100 + 800 + QUIET_MS));
    expect(page.snapshot).toContain('heading "Dashboard"');
  });
});

describe('settling after an action (ADR-0159)', () => {
  test('a click that fetches for 1 s: the request the click started is in the set, so the render is observed', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'click-fetch.html');
    const after = await click(client, lease.lease_id, page, 'button', 'Load value');
    expect(after.settle).toEqual({ outcome: 'dom_quiet', elapsed_ms: expect.any(Number), pending_at_entry: 1, overflow: false });
    expectElapsedIn(after.settle, quietAfter(1_000 + QUIET_MS));
    expect(after.snapshot).toContain('Loaded 42');
  });

  test('a click whose fetch answers text/event-stream (how chat UIs stream): the stream leaves the set at its headers (300 ms)', async ({
    client,
    lease,
    fixtures,
  }) => {
    const page = await open(client, lease.lease_id, fixtures, 'fetch-stream.html');
    const after = await click(client, lease.lease_id, page, 'button', 'Ask');
    expect(after.settle).toEqual({ outcome: 'dom_quiet', elapsed_ms: expect.any(Number), pending_at_entry: 1, overflow: false });
    expectElapsedIn(after.settle, quietAfter(300 + QUIET_MS));
    expect(after.snapshot).toContain('Answer: open');
  });

  test('a click whose fetch answers a never-ending NDJSON body keeps it in the set: bound_expired at the budget', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'fetch-stream.html?as=ndjson');
    const after = await click(client, lease.lease_id, page, 'button', 'Ask');
    expect(after.settle).toMatchObject({ outcome: 'bound_expired', expired_by: 'deadline', pending_at_entry: 1 });
    expectElapsedIn(after.settle, AT_BUDGET);
  });

  test('a click that navigates settles on the new document, not on the old one’s 3 s request', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'click-navigate.html');
    const after = await click(client, lease.lease_id, page, 'button', 'Go to the quiet page');
    expect(after.url).toBe(fixtures.url('settle/quiet.html?arrived=1'));
    expect(after.settle).toEqual({ outcome: 'dom_quiet', elapsed_ms: expect.any(Number), pending_at_entry: 0, overflow: false });
    expectElapsedIn(after.settle, quietAfter(QUIET_MS));
    expect(after.snapshot).toContain('heading "A quiet page"');
  });

  test('a click that starts 300 fetches overflows the set: bound_expired by overflow', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'fetch-burst.html');
    const after = await click(client, lease.lease_id, page, 'button', 'Start 300 fetches');
    expect(after.settle).toEqual({ outcome: 'bound_expired', expired_by: 'overflow', elapsed_ms: expect.any(Number), pending_at_entry: 256, overflow: true });
    expectElapsedIn(after.settle, OVERFLOW_WINDOW);
  });

  test('a click on a polling page waits only for the polls in flight when it was dispatched, then the quiet period', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'polling.html');
    const after = await click(client, lease.lease_id, page, 'button', 'Do nothing');
    expect(after.settle).toMatchObject({ outcome: 'dom_quiet', overflow: false });
    // A poll starts every 100 ms and takes 400 ms: at entry the newest has 300-400 ms left, and
    // the polls started while the click is dispatched (well under 100 ms on an idle machine) also
    // joined; none started after the page answered did.
    expect(after.settle.pending_at_entry).toBeGreaterThanOrEqual(1);
    expectElapsedIn(after.settle, quietAfter(300 + QUIET_MS, 100 + 400 + QUIET_MS));
  });

  test('a click on a quiet page is dom_quiet after the quiet period', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'quiet.html');
    const after = await click(client, lease.lease_id, page, 'button', 'Do nothing');
    expect(after.settle).toEqual({ outcome: 'dom_quiet', elapsed_ms: expect.any(Number), pending_at_entry: 0, overflow: false });
    expectElapsedIn(after.settle, quietAfter(QUIET_MS));
  });

  test('a click on a ticking clock is bound_expired at the budget, and a plain observe claims no stability', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'ticking-clock.html');
    const after = await click(client, lease.lease_id, page, 'button', 'Do nothing');
    expect(after.settle).toMatchObject({ outcome: 'bound_expired', expired_by: 'deadline', overflow: false });
    expectElapsedIn(after.settle, AT_BUDGET);
    const observed = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 20_000 });
    expect(observed.settle).toEqual({ outcome: 'not_waited', elapsed_ms: 0, pending_at_entry: 0, overflow: false });
  });
});

describe("settling reads in the host's isolated world, which a page's scripts cannot reach", () => {
  // tampered-clock.html changes its DOM every 50 ms and first replaces what an in-page check would
  // lean on; a settle that read in the page's own world would report dom_quiet early.
  for (const tamper of ['observer', 'clock', 'array', 'promise', 'ready-state', 'timers', 'all']) {
    test(`a ticking page that tampers with ${tamper === 'all' ? 'all of them at once' : tamper} is still bound_expired at the budget after a navigation`, async ({
      client,
      lease,
      fixtures,
    }) => {
      const page = await open(client, lease.lease_id, fixtures, `tampered-clock.html?tamper=${tamper}`);
      expect(page.settle).toEqual({ outcome: 'bound_expired', expired_by: 'deadline', elapsed_ms: expect.any(Number), pending_at_entry: 0, overflow: false });
      expectElapsedIn(page.settle, AT_BUDGET);
      expect(page.snapshot).toContain('heading "Tampered clock"');
    });
  }

  test('a click on a ticking page that tampers with everything is bound_expired at the budget', async ({ client, lease, fixtures }) => {
    const page = await open(client, lease.lease_id, fixtures, 'tampered-clock.html?tamper=all');
    const after = await click(client, lease.lease_id, page, 'button', 'Do nothing');
    expect(after.settle).toMatchObject({ outcome: 'bound_expired', expired_by: 'deadline', overflow: false });
    expectElapsedIn(after.settle, AT_BUDGET);
  });
});
