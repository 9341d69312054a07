import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { Observation } from '../../shared/observation.ts';
import type { BrowserAction } from '../../shared/tool-arguments.ts';
import type { HostClient } from '../support/host-client.ts';
import { hostTest } from '../support/host-fixture.ts';

const test = hostTest();

function act(client: HostClient, leaseId: string, action: BrowserAction): Promise<Observation> {
  return client.call('page.act', { lease_id: leaseId, action, timeout_ms: 15_000 });
}

describe('actions', () => {
  test('a click on a reference dispatches once and the next observation shows its effect', async ({ client, lease, fixtures }) => {
    const before = fixtures.hits('click');
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('button.html'), timeout_ms: 15_000 });
    const after = await act(client, lease.lease_id, { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Record click') });
    expect(fixtures.hits('click')).toBe(before + 1);
    expect(after.revision).toBe(page.revision + 1);
    expect(after.snapshot).toContain('Clicked 1');
    expect(after.settle.outcome).toBe('dom_quiet');
  });

  test('acting on an older revision is stale_revision and dispatches nothing', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('button.html'), timeout_ms: 15_000 });
    const newer = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    const before = fixtures.hits('click');
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Record click') },
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'stale_revision' } });
    expect(fixtures.hits('click')).toBe(before);
    // The page is untouched: the newest revision still acts.
    await act(client, lease.lease_id, { action: 'click', revision: newer.revision, reference: refOf(newer.snapshot, 'button', 'Record click') });
    expect(fixtures.hits('click')).toBe(before + 1);
  });

  test('two acts on one lease run one at a time: the second, on the same revision, is stale_revision', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('button.html'), timeout_ms: 15_000 });
    const before = fixtures.hits('click');
    const action = { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Record click') } as const;
    const responses = await Promise.all([0, 1].map(() => client.request('page.act', { lease_id: lease.lease_id, action, timeout_ms: 15_000 })));
    expect(responses.filter((r) => 'result' in r)).toHaveLength(1);
    expect(responses.filter((r) => 'error' in r)).toMatchObject([{ error: { code: 'stale_revision' } }]);
    expect(fixtures.hits('click')).toBe(before + 1);
  });

  test('a reference that matches nothing is action_failed and dispatches nothing', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('button.html'), timeout_ms: 15_000 });
    const before = fixtures.hits('click');
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: 'e999' },
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'action_failed' } });
    expect(fixtures.hits('click')).toBe(before);
  });

  test('type with submit, check, select and scroll reach the page', async ({ client, lease, fixtures }) => {
    let page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('form.html'), timeout_ms: 15_000 });
    page = await act(client, lease.lease_id, { action: 'check', revision: page.revision, reference: refOf(page.snapshot, 'checkbox', 'Subscribe') });
    expect(page.snapshot).toMatch(/checkbox "Subscribe" \[checked\]/);
    page = await act(client, lease.lease_id, {
      action: 'select',
      revision: page.revision,
      reference: refOf(page.snapshot, 'combobox', 'Color'),
      value: 'green',
    });
    expect(page.snapshot).toMatch(/option "Green" \[selected\]/);
    page = await act(client, lease.lease_id, { action: 'uncheck', revision: page.revision, reference: refOf(page.snapshot, 'checkbox', 'Subscribe') });
    expect(page.snapshot).not.toMatch(/checkbox "Subscribe" \[checked\]/);
    const submits = fixtures.hits('submit');
    page = await act(client, lease.lease_id, {
      action: 'type',
      revision: page.revision,
      reference: refOf(page.snapshot, 'textbox', 'Name'),
      text: 'Ada',
      submit: true,
    });
    expect(page.snapshot).toContain('Submitted Ada');
    expect(fixtures.hits('submit')).toBe(submits + 1);
    page = await act(client, lease.lease_id, { action: 'scroll', revision: page.revision, reference: refOf(page.snapshot, 'heading', 'Form'), delta: 600 });
    expect(page.snapshot).toMatch(/Scrolled [1-9]\d*/);
    page = await act(client, lease.lease_id, { action: 'press', revision: page.revision, reference: refOf(page.snapshot, 'textbox', 'Name'), key: 'End' });
    expect(page.revision).toBeGreaterThan(0);
  });

  test('a lease released while the act waits in its prechecks sends nothing: lease_lost', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('late-button.html'), timeout_ms: 15_000 });
    const before = fixtures.hits('late');
    const acting = client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Pay') },
      timeout_ms: 15_000,
    });
    // The run is cancelled while the button is still disabled: the edge releases its lease.
    expect(await client.call('lease.release', { lease_id: lease.lease_id })).toEqual({ released: true });
    expect(await acting).toMatchObject({ error: { code: 'lease_lost' } });
    expect(fixtures.hits('late')).toBe(before);
  });
});
