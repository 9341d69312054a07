import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { Observation } from '../../shared/observation.ts';
import type { HostClient } from '../support/host-client.ts';
import { acquire, hostTest } from '../support/host-fixture.ts';
import { crashPage, quitBrowser } from '../support/profile-devtools.ts';
import { until } from '../support/until.ts';

// A crashed renderer or a page whose main thread never comes back must not wedge the profile: the
// page is closed and replaced by a fresh one (earlier references void), the call in flight fails
// page_changed (nothing sent) or outcome_unknown (the input may have reached the page), and the
// next call works. The crash comes through the DevTools port person debugging opens.

const test = hostTest({ personDebugging: true });

function navigate(client: HostClient, leaseId: string, url: string): Promise<Observation> {
  return client.call('page.navigate', { lease_id: leaseId, url, timeout_ms: 15_000 });
}

/** Navigates to button.html and clicks its button: the profile's page works. */
async function clickWorks(client: HostClient, leaseId: string, fixtures: { url(pathname: string): string; hits(name: string): number }): Promise<void> {
  const page = await navigate(client, leaseId, fixtures.url('button.html'));
  const before = fixtures.hits('click');
  const after = await client.call('page.act', {
    lease_id: leaseId,
    action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Record click') },
    timeout_ms: 15_000,
  });
  expect(after.snapshot).toContain('Clicked 1');
  expect(fixtures.hits('click')).toBe(before + 1);
}

describe('a crashed page', () => {
  test('is replaced: an act on its references fails page_changed, and the next navigate and act work', async ({ client, lease, fixtures, profilesDir }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('button.html'));
    await crashPage(profilesDir, 'main', fixtures.url('button.html'));

    const stale = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Record click') },
      timeout_ms: 15_000,
    });
    expect(stale).toMatchObject({ error: { code: 'page_changed' } });
    await clickWorks(client, lease.lease_id, fixtures);
  });

  test('under an act still in its prechecks fails it page_changed, nothing sent', async ({ client, lease, fixtures, profilesDir }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('actionability/blocked.html'));
    // The covered button never becomes clickable: the act waits in its prechecks.
    const acting = client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Buy now') },
      timeout_ms: 15_000,
    });
    await sleep(500);
    await crashPage(profilesDir, 'main', fixtures.url('actionability/blocked.html'));
    expect(await acting).toMatchObject({ error: { code: 'page_changed' } });
    expect(fixtures.hits('buy')).toBe(0);
    await clickWorks(client, lease.lease_id, fixtures);
  });

  test('under an act whose click was sent fails it outcome_unknown, never with an observation of another page', async ({
    client,
    lease,
    fixtures,
    profilesDir,
  }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('click-then-wait.html'));
    const acting = client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Start the slow job') },
      timeout_ms: 15_000,
    });
    // The click has reached the page; settling waits on the slow answer it started.
    await until(() => fixtures.hits('start') === 1, 'the page to record its start', 30_000, 20);
    await crashPage(profilesDir, 'main', fixtures.url('click-then-wait.html'));
    expect(await acting).toMatchObject({ error: { code: 'outcome_unknown' } });
    await clickWorks(client, lease.lease_id, fixtures);
  });
});

describe('a page that stops answering', () => {
  test('fails the act within its timeout, is replaced, and the next navigate and act work', async ({ client, lease, fixtures }) => {
    // The click's handler records its effect, then never returns (a ten-minute busy loop).
    const page = await navigate(client, lease.lease_id, fixtures.url('hangs-on-click.html?after_ms=0&hang_ms=600000'));
    const act = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Archive everything') },
      timeout_ms: 10_000,
    });
    expect(act).toMatchObject({ error: { code: 'outcome_unknown' } });
    expect(fixtures.hits('archive')).toBe(1);
    await clickWorks(client, lease.lease_id, fixtures);
  });
});

describe('a page that stops answering just before its lease ends', () => {
  test("is judged on its own document, not on the about:blank the lease's end leaves for: the next lease's page on the same site works", async ({
    client,
    fixtures,
  }) => {
    const first = await acquire(client, 'hung-then-released');
    const page = await navigate(client, first.lease_id, fixtures.url('hangs-on-click.html?after_ms=0&hang_ms=600000'));
    const act = await client.request('page.act', {
      lease_id: first.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Archive everything') },
      timeout_ms: 10_000,
    });
    expect(act).toMatchObject({ error: { code: 'outcome_unknown' } });
    // The run gives up at once, as an agent whose call failed does.
    await client.call('lease.release', { lease_id: first.lease_id });
    const second = await acquire(client, 'hung-then-released');
    try {
      await clickWorks(client, second.lease_id, fixtures);
    } finally {
      await client.call('lease.release', { lease_id: second.lease_id });
    }
  });
});

describe('a browser that quits', () => {
  test('interrupts its lease; the next lease gets a relaunched browser that works', async ({ client, fixtures, profilesDir, host }) => {
    const first = await acquire(client, 'quitting');
    await navigate(client, first.lease_id, fixtures.url('quiet.html'));
    const browsers = host.status().browsers;
    await quitBrowser(profilesDir, 'quitting');
    await until(() => host.status().browsers === browsers - 1, 'the quit browser to leave the host', 30_000, 20);
    expect(await client.request('page.observe', { lease_id: first.lease_id, timeout_ms: 5_000 })).toMatchObject({ error: { code: 'lease_lost' } });

    const second = await acquire(client, 'quitting');
    try {
      await clickWorks(client, second.lease_id, fixtures);
    } finally {
      await client.call('lease.release', { lease_id: second.lease_id });
    }
  });
});
