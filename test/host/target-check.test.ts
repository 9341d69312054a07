import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { Observation } from '../../shared/observation.ts';
import type { FixtureServer } from '../support/fixture-server.ts';
import type { HostClient } from '../support/host-client.ts';
import { hostTest } from '../support/host-fixture.ts';

const test = hostTest();

function navigate(client: HostClient, leaseId: string, url: string): Promise<Observation> {
  return client.call('page.navigate', { lease_id: leaseId, url, timeout_ms: 15_000 });
}

/**
 * Observes the relabel page with `query`, waits `waitMs` for it to change, then clicks "Save draft"
 * as observed. The page changes by its own timer from its load, so the observation must end before
 * that timer fires: 3 s leaves room for a loaded machine (at 800 ms a CI run observed the page
 * already changed), and `waitMs` counts from the observation's end, after which the change has come.
 */
async function clickSaveDraftAfterChange(client: HostClient, leaseId: string, fixtures: FixtureServer, query: string, waitMs: number) {
  const page = await navigate(client, leaseId, fixtures.url(`confinement/relabel.html?${query}`));
  const reference = refOf(page.snapshot, 'button', 'Save draft');
  await new Promise((resolve) => setTimeout(resolve, waitMs));
  return client.request('page.act', {
    lease_id: leaseId,
    action: { action: 'click', revision: page.revision, reference },
    target: { role: 'button', name: 'Save draft', frame_origin: fixtures.origin },
    timeout_ms: 15_000,
  });
}

describe('the host re-checks an act target right before the input', () => {
  test('a button relabelled and rewired after the observation fails target_changed and its new handler never runs', async ({ client, lease, fixtures }) => {
    const response = await clickSaveDraftAfterChange(client, lease.lease_id, fixtures, 'rewire_after_ms=3000', 3_500);
    expect(response).toMatchObject({ error: { code: 'target_changed' } });
    expect(fixtures.hits('delete')).toBe(0);
    expect(fixtures.hits('save')).toBe(0);
  });

  test('a relabelled target that is also covered fails target_changed, not not_actionable: the target check decides before the trial', async ({
    client,
    lease,
    fixtures,
  }) => {
    const response = await clickSaveDraftAfterChange(client, lease.lease_id, fixtures, 'cover_after_ms=3000', 3_500);
    expect(response).toMatchObject({ error: { code: 'target_changed' } });
    expect(fixtures.hits('delete')).toBe(0);
    // The page is left as it was for the next observe.
    const again = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(again.snapshot).toContain('Delete everything');
  });

  test('a refused act leaves the page unscrolled: the trial, which scrolls its element into view, starts only once the target check passed', async ({
    client,
    lease,
    fixtures,
  }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('confinement/far-below-framed.html'));
    const reference = refOf(page.snapshot, 'button', 'Save draft');
    const [scrolled, saved] = [fixtures.hits('scrolled'), fixtures.hits('save')];
    for (const target of [
      { role: 'button', name: 'Delete everything', frame_origin: fixtures.origin },
      { role: 'button', name: 'Save draft', frame_origin: 'https://widgets.example' },
    ]) {
      const response = await client.request('page.act', {
        lease_id: lease.lease_id,
        action: { action: 'click', revision: page.revision, reference },
        target,
        timeout_ms: 15_000,
      });
      expect(response).toMatchObject({ error: { code: 'target_changed' } });
    }
    // The frame reports its first scroll; give a stray one time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(fixtures.hits('scrolled')).toBe(scrolled);
    expect(fixtures.hits('save')).toBe(saved);
  });

  test('an unchanged target passes the check and the act runs once', async ({ client, lease, fixtures }) => {
    const before = fixtures.hits('save');
    const page = await navigate(client, lease.lease_id, fixtures.url('confinement/relabel.html'));
    const after = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Save draft') },
      target: { role: 'button', name: 'Save draft', frame_origin: fixtures.origin },
      timeout_ms: 15_000,
    });
    expect(after.revision).toBe(page.revision + 1);
    await expect.poll(() => fixtures.hits('save')).toBe(before + 1);
  });

  test('a target expected in another frame than it is in fails target_changed', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('confinement/relabel.html'));
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Save draft') },
      target: { role: 'button', name: 'Save draft', frame_origin: 'https://widgets.example' },
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'target_changed' } });
  });

  test('a button inside a frame of the page itself is checked by that frame', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('confinement/frames.html'));
    const after = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Inside own frame') },
      target: { role: 'button', name: 'Inside own frame', frame_origin: fixtures.origin },
      timeout_ms: 15_000,
    });
    expect(after.revision).toBe(page.revision + 1);
  });
});

describe('a page does not outlive its lease', () => {
  test("a page that keeps sending requests stops when its lease ends; the next run's lease, on the same origins, starts on about:blank", async ({
    client,
    fixtures,
  }) => {
    const first = await client.call('lease.acquire', { run_id: 'ticking-1', profile_id: 'ticking', origins: [fixtures.origin], ttl_ms: 60_000 });
    await navigate(client, first.lease_id, fixtures.url('confinement/ticking.html'));
    await expect.poll(() => fixtures.hits('tick'), { timeout: 5_000 }).toBeGreaterThan(2);
    await client.call('lease.release', { lease_id: first.lease_id });
    // The next run names the same origin, so a page still running would reach it again.
    const second = await client.call('lease.acquire', { run_id: 'ticking-2', profile_id: 'ticking', origins: [fixtures.origin], ttl_ms: 60_000 });
    const stoppedAt = fixtures.hits('tick');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(fixtures.hits('tick')).toBe(stoppedAt);
    const page = await client.call('page.observe', { lease_id: second.lease_id, timeout_ms: 15_000 });
    expect(page.url).toBe('about:blank');
    await client.call('lease.release', { lease_id: second.lease_id });
  });
});
