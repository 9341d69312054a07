import { describe, expect } from 'vitest';
import { refOf, snapshotNodes } from '../../scripts/aria-refs.ts';
import type { Observation } from '../../shared/observation.ts';
import type { HostClient } from '../support/host-client.ts';
import { hostTest } from '../support/host-fixture.ts';

const test = hostTest();

function navigate(client: HostClient, leaseId: string, url: string): Promise<Observation> {
  return client.call('page.navigate', { lease_id: leaseId, url, timeout_ms: 15_000 });
}

/** The cards of the board, top to bottom, as the snapshot lists them. */
function cardOrder(snapshot: string): string[] {
  return snapshotNodes(snapshot)
    .filter((node) => node.role === 'listitem')
    .map((node) => node.name ?? '');
}

describe('hover', () => {
  test('a hover on a relabelled element fails target_changed and moves no pointer over it', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/hover-menu.html'));
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'hover', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Products') },
      target: { role: 'button', name: 'Services', frame_origin: fixtures.origin },
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'target_changed' } });
    const now = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(now.snapshot).toContain('Hovered 0');
    expect(now.snapshot).not.toContain('Laptops');
  });

  test('a hover opens a menu shown only under the pointer, and its item is in the next observation', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/hover-menu.html'));
    expect(page.snapshot).not.toContain('Laptops');
    const after = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'hover', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Products') },
      target: { role: 'button', name: 'Products', frame_origin: fixtures.origin },
      timeout_ms: 15_000,
    });
    expect(after.revision).toBe(page.revision + 1);
    expect(after.snapshot).toMatch(/link "Laptops" \[ref=\w+\]/);
    expect(after.snapshot).toContain('Hovered 1');
  });
});

describe('drag', () => {
  test('a drag of a SortableJS card onto another moves it, and the next observation shows the new order', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/sortable-list.html'));
    expect(cardOrder(page.snapshot)).toEqual(['Card A', 'Card B', 'Card C']);
    const after = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: {
        action: 'drag',
        revision: page.revision,
        reference: refOf(page.snapshot, 'listitem', 'Card A'),
        to_reference: refOf(page.snapshot, 'listitem', 'Card C'),
      },
      target: { role: 'listitem', name: 'Card A', frame_origin: fixtures.origin },
      elements: [{ reference: refOf(page.snapshot, 'listitem', 'Card C'), role: 'listitem', name: 'Card C', frame_origin: fixtures.origin }],
      timeout_ms: 15_000,
    });
    expect(cardOrder(after.snapshot)).toEqual(['Card B', 'Card C', 'Card A']);
    expect(after.snapshot).toContain('Order: B C A');
  });

  test('a drag whose destination changed since the observation fails target_changed and nothing moves', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/sortable-list.html'));
    const destination = refOf(page.snapshot, 'listitem', 'Card C');
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'drag', revision: page.revision, reference: refOf(page.snapshot, 'listitem', 'Card A'), to_reference: destination },
      target: { role: 'listitem', name: 'Card A', frame_origin: fixtures.origin },
      elements: [{ reference: destination, role: 'listitem', name: 'Trash', frame_origin: fixtures.origin }],
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'target_changed', message: expect.stringContaining('the drag destination') } });
    const now = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(cardOrder(now.snapshot)).toEqual(['Card A', 'Card B', 'Card C']);
  });

  test('a drag whose destination has no expectation while its source has one is invalid_params', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/sortable-list.html'));
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: {
        action: 'drag',
        revision: page.revision,
        reference: refOf(page.snapshot, 'listitem', 'Card A'),
        to_reference: refOf(page.snapshot, 'listitem', 'Card C'),
      },
      target: { role: 'listitem', name: 'Card A', frame_origin: fixtures.origin },
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'invalid_params' } });
    const now = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(cardOrder(now.snapshot)).toEqual(['Card A', 'Card B', 'Card C']);
  });
});
