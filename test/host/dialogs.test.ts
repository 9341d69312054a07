import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { Observation } from '../../shared/observation.ts';
import type { BrowserAction } from '../../shared/tool-arguments.ts';
import type { HostClient } from '../support/host-client.ts';
import { acquire, hostTest } from '../support/host-fixture.ts';

const test = hostTest();

// README "Confinement": the host answers every JavaScript dialog of the page it drives at once and
// reports it on the next observation: alert accepted, confirm and prompt dismissed, beforeunload
// accepted only when the host itself leaves the page; a dialog loop ends the page.

function navigate(client: HostClient, leaseId: string, url: string): Promise<Observation> {
  return client.call('page.navigate', { lease_id: leaseId, url, timeout_ms: 15_000 });
}

function act(client: HostClient, leaseId: string, action: BrowserAction): Promise<Observation> {
  return client.call('page.act', { lease_id: leaseId, action, timeout_ms: 15_000 });
}

/** Clicks the button named `name` on `page`. */
function click(client: HostClient, leaseId: string, page: Observation, role: string, name: string): Promise<Observation> {
  return act(client, leaseId, { action: 'click', revision: page.revision, reference: refOf(page.snapshot, role, name) });
}

describe('dialogs', () => {
  test('an alert is accepted, a confirm and a prompt are dismissed, each reported on the act that raised it', async ({ client, lease, fixtures }) => {
    let page = await navigate(client, lease.lease_id, fixtures.url('dialogs/answers.html'));
    expect(page.dialogs).toBeUndefined();

    page = await click(client, lease.lease_id, page, 'button', 'Show alert');
    expect(page.dialogs).toEqual([{ type: 'alert', message: 'Saved', answer: 'accepted', at: expect.any(String) }]);
    expect(page.snapshot).toContain('Alert closed');

    page = await click(client, lease.lease_id, page, 'button', 'Ask confirm');
    expect(page.dialogs).toEqual([{ type: 'confirm', message: 'Delete everything?', answer: 'dismissed', at: expect.any(String) }]);
    expect(page.snapshot).toContain('Confirm answered false');

    page = await click(client, lease.lease_id, page, 'button', 'Ask prompt');
    expect(page.dialogs).toEqual([{ type: 'prompt', message: 'Your name?', answer: 'dismissed', at: expect.any(String) }]);
    expect(page.snapshot).toContain('Prompt answered null');

    // Reported once: an observation after them carries none.
    expect((await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 })).dialogs).toBeUndefined();
  });

  test('a dialog message longer than 300 characters is cut to 300', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('dialogs/answers.html'));
    const after = await click(client, lease.lease_id, page, 'button', 'Show long alert');
    expect(after.dialogs).toHaveLength(1);
    expect(after.dialogs?.[0]).toMatchObject({ type: 'alert', answer: 'accepted' });
    expect(after.dialogs?.[0]?.message.length).toBe(300);
    expect(after.dialogs?.[0]?.message.startsWith('xxxxxxxxxx')).toBe(true);
  });

  test('a beforeunload the page starts (a click on its link) is dismissed and reported; the host navigating away accepts it', async ({
    client,
    lease,
    fixtures,
  }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('dialogs/unsaved.html'));
    const stayed = await click(client, lease.lease_id, page, 'link', 'Leave this page');
    expect(stayed.url).toBe(fixtures.url('dialogs/unsaved.html'));
    expect(stayed.dialogs).toEqual([{ type: 'beforeunload', message: expect.any(String), answer: 'dismissed', at: expect.any(String) }]);

    // The page has had its user gesture, so it asks again; the agent's navigation goes anyway.
    const left = await navigate(client, lease.lease_id, fixtures.url('quiet.html'));
    expect(left.url).toBe(fixtures.url('quiet.html'));
    expect(left.dialogs).toEqual([{ type: 'beforeunload', message: expect.any(String), answer: 'accepted', at: expect.any(String) }]);
  });

  test('a lease that ends on a page asking beforeunload leaves it; the next lease navigates', async ({ client, fixtures }) => {
    const first = await acquire(client, 'unsaved');
    const page = await navigate(client, first.lease_id, fixtures.url('dialogs/unsaved.html'));
    // The click gives the page its user gesture (and is refused: the page stays).
    await click(client, first.lease_id, page, 'link', 'Leave this page');
    expect(await client.call('lease.release', { lease_id: first.lease_id })).toEqual({ released: true });

    const second = await acquire(client, 'unsaved');
    try {
      const next = await navigate(client, second.lease_id, fixtures.url('quiet.html'));
      expect(next.url).toBe(fixtures.url('quiet.html'));
      expect(next.snapshot).toContain('A quiet page');
    } finally {
      await client.call('lease.release', { lease_id: second.lease_id });
    }
  });

  test('an alert loop ends the page: reported as page_closed, and the next navigation works on a fresh page', async ({ client, lease, fixtures }) => {
    const looping = await client.request('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('dialogs/alert-loop.html'), timeout_ms: 15_000 });
    expect(looping).toMatchObject({ error: { code: 'page_changed' } });

    const next = await navigate(client, lease.lease_id, fixtures.url('quiet.html'));
    expect(next.url).toBe(fixtures.url('quiet.html'));
    expect(next.snapshot).toContain('A quiet page');
    const dialogs = next.dialogs ?? [];
    expect(dialogs.slice(0, -1).every((dialog) => dialog.type === 'alert' && dialog.message === 'Again' && dialog.answer === 'accepted')).toBe(true);
    expect(dialogs.at(-1)).toEqual({ type: 'alert', message: 'Again', answer: 'page_closed', at: expect.any(String) });
  });
});
