import { describe, expect } from 'vitest';
import { captureRevision } from '../../browser-host/capture.ts';
import { Deadline } from '../../browser-host/deadline.ts';
import { HostError } from '../../browser-host/host-error.ts';
import { NOT_WAITED } from '../../browser-host/observation.ts';
import { ProfileBrowser } from '../../browser-host/profile-browser.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import type { HostClient } from '../support/host-client.ts';
import { hostTest, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';

const test = hostTest();

// ADR-0159: a capture that times out is cancelled and joined before the host answers; it returns
// no references (earlier ones may be invalid) and the next act or continuation read fails
// page_changed until a fresh full capture succeeds. Losing usable evidence after an action is
// outcome_unknown: the action may have happened, so the edge ends the call uncertain.
//
// Captures are made slow honestly: by a page with thousands of controls (an AI-mode capture reads
// every one) or by a page that blocks its own main thread, which no capture can read through,
// however fast the machine.

/** A fresh observe long enough for a slow page, then the named button's ref in it. */
async function observeButton(client: HostClient, leaseId: string, name: string): Promise<{ revision: number; ref: string }> {
  const fresh = await client.call('page.observe', { lease_id: leaseId, timeout_ms: 60_000 });
  return { revision: fresh.revision, ref: refOf(fresh.snapshot, 'button', name) };
}

describe('capture cancellation (ADR-0159)', () => {
  test('a capture that outlives its deadline is cancelled, returns no references, and acting fails page_changed until a fresh observe', async ({
    client,
    lease,
    fixtures,
  }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('many-nodes.html'), timeout_ms: 60_000 });
    const ref = refOf(page.snapshot, 'button', 'Record click');

    // 3,000 buttons take far longer than 100 ms to capture.
    const cancelled = await client.request('page.observe', { lease_id: lease.lease_id, timeout_ms: 100 });
    expect(cancelled).toEqual({ id: expect.any(Number), error: { code: 'deadline_exceeded', message: expect.stringContaining('cancelled') } });

    const act = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: ref },
      timeout_ms: 30_000,
    });
    expect(act).toMatchObject({ error: { code: 'page_changed' } });
    const more = await client.request('page.observe', { lease_id: lease.lease_id, continuation: page.window.continuation, timeout_ms: 5_000 });
    expect(more).toMatchObject({ error: { code: 'page_changed' } });
    expect(fixtures.hits('many')).toBe(0);

    // The cancelled capture consumed no revision; a fresh one is the next, and its refs act.
    const fresh = await observeButton(client, lease.lease_id, 'Record click');
    expect(fresh.revision).toBe(page.revision + 1);
    await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: fresh.revision, reference: fresh.ref },
      timeout_ms: 60_000,
    });
    expect(fixtures.hits('many')).toBe(1);
  });

  test('an act whose page stops reading input mid-click is outcome_unknown, never action_failed: the click did reach the page', async ({
    client,
    lease,
    fixtures,
  }) => {
    // The handler records the effect, then blocks the page for 5 s: Playwright never hears the
    // click was handled before the act's 3 s run out.
    const page = await client.call('page.navigate', {
      lease_id: lease.lease_id,
      url: fixtures.url('hangs-on-click.html?after_ms=0&hang_ms=5000'),
      timeout_ms: 15_000,
    });
    const before = fixtures.hits('archive');
    const act = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Archive everything') },
      timeout_ms: 3_000,
    });
    expect(act).toMatchObject({ error: { code: 'outcome_unknown' } });
    expect(fixtures.hits('archive')).toBe(before + 1);

    const again = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Archive everything') },
      timeout_ms: 3_000,
    });
    expect(again).toMatchObject({ error: { code: 'page_changed' } });
    expect(fixtures.hits('archive')).toBe(before + 1);
    // Once the page answers again, a fresh observe sees the click's end result.
    const fresh = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 30_000 });
    expect(fresh.revision).toBe(page.revision + 1);
    expect(fresh.snapshot).toContain('button "Archived"');
  });

  test('an act whose page cannot be captured after the click is outcome_unknown, and the next act fails page_changed until a fresh observe', async ({
    client,
    lease,
    fixtures,
  }) => {
    // The click is acknowledged; 150 ms later, while the host settles, the page blocks for 6 s:
    // neither settling nor the capture can read it before the act's 3 s run out.
    const page = await client.call('page.navigate', {
      lease_id: lease.lease_id,
      url: fixtures.url('hangs-on-click.html?after_ms=150&hang_ms=6000'),
      timeout_ms: 15_000,
    });
    const before = fixtures.hits('archive');
    const act = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Archive everything') },
      timeout_ms: 3_000,
    });
    expect(act).toEqual({ id: expect.any(Number), error: { code: 'outcome_unknown', message: expect.any(String) } });
    expect(fixtures.hits('archive')).toBe(before + 1);

    const again = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Archive everything') },
      timeout_ms: 3_000,
    });
    expect(again).toMatchObject({ error: { code: 'page_changed' } });
    expect(fixtures.hits('archive')).toBe(before + 1);

    const fresh = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 30_000 });
    expect(fresh.revision).toBe(page.revision + 1);
    expect(fresh.snapshot).toContain('button "Archived"');
  });
});

describe('captureRevision', () => {
  test('a cancelled capture has finished before captureRevision rejects, and it consumed no revision', async ({ fixtures }) => {
    const profiles = await temporaryDirectory('capture-join-');
    const config = testHostConfig(profiles.dir);
    const launch = Deadline.after(config.launchTimeoutMs);
    const browser = await ProfileBrowser.launch(launch, 'join', { ...config, egress: undefined, profilesDir: profiles.dir }).finally(() => launch.dispose());
    browser.confinement.leaseOrigins = [fixtures.origin];
    try {
      const setup = Deadline.after(60_000);
      try {
        const page = await browser.page(setup);
        await page.goto(fixtures.url('many-nodes.html'));
        await captureRevision(setup, browser, NOT_WAITED);
      } finally {
        setup.dispose();
      }
      const revision = browser.revisions.current;

      const tight = Deadline.after(100);
      const failure = await captureRevision(tight, browser, NOT_WAITED).then(
        () => undefined,
        (error: unknown) => error,
      );
      tight.dispose();
      // Checked at the moment it rejected: nothing of the capture is still running.
      expect(browser.capturesRunning).toBe(0);
      expect(failure).toBeInstanceOf(HostError);
      expect((failure as HostError).code).toBe('deadline_exceeded');
      expect(browser.revisions.current).toBe(revision);
      expect(browser.revisions.invalidation).toMatch(/capture failed/);
    } finally {
      await browser.close();
      await profiles.remove();
    }
  });
});
