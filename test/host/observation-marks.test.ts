import { describe, expect } from 'vitest';
import { refOf, snapshotNodes } from '../../scripts/aria-refs.ts';
import type { Observation } from '../../shared/observation.ts';
import type { FixtureServer } from '../support/fixture-server.ts';
import type { HostClient } from '../support/host-client.ts';
import { hostTest } from '../support/host-fixture.ts';

// What a person sees on pages built like common real sites is in the observation, in real
// Chromium through the host's wire: names YAML must quote, names that come from content,
// controls inside closed shadow roots, and what a modal dialog puts out of reach.

const test = hostTest();

function navigate(client: HostClient, leaseId: string, fixtures: FixtureServer, path: string): Promise<Observation> {
  return client.call('page.navigate', { lease_id: leaseId, url: fixtures.url(`observation/${path}`), timeout_ms: 20_000 });
}

function click(
  client: HostClient,
  leaseId: string,
  fixtures: FixtureServer,
  page: Observation,
  role: string,
  name: string,
  reference = refOf(page.snapshot, role, name),
) {
  return client.request('page.act', {
    lease_id: leaseId,
    action: { action: 'click', revision: page.revision, reference },
    target: { role, name, frame_origin: fixtures.origin },
    timeout_ms: 20_000,
  });
}

function named(page: Observation, role: string): string[] {
  return snapshotNodes(page.snapshot)
    .filter((node) => node.role === role)
    .map((node) => node.name ?? '');
}

describe('names YAML has to quote', () => {
  test('headings and buttons with #, :, quotes, a leading dash and emoji are read with their names, and new ones appear after an act', async ({
    client,
    lease,
    fixtures,
  }) => {
    const page = await navigate(client, lease.lease_id, fixtures, 'feed.html');
    expect(page.title).toBe('Feed: posts #1-#3');
    expect(named(page, 'heading')).toEqual(['Latest: posts', 'Post #1', 'Post #2', 'Post #3']);
    expect(named(page, 'button')).toEqual(['Load more: #4', 'Reply 🙂', '42', 'true', 'Say "yes"']);
    expect(named(page, 'link')).toEqual(['#news']);
    // The quoted forms are what Playwright printed: the names survive them.
    expect(page.snapshot).toContain(`- 'heading "Post #1" [level=2]`);
    const after = await click(client, lease.lease_id, fixtures, page, 'button', 'Load more: #4');
    expect(after).toMatchObject({ result: { revision: page.revision + 1 } });
    expect(named((after as { result: Observation }).result, 'heading')).toContain('Post #4');
  });
});

describe('names that come from content', () => {
  test('a link and a button holding only an image are named by its alt text, and act by that name', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures, 'image-controls.html');
    expect(named(page, 'link')).toEqual(['Home', 'Account', 'Help centre']);
    expect(named(page, 'button')).toEqual(['Search', 'Cart']);
    const after = await click(client, lease.lease_id, fixtures, page, 'button', 'Search');
    expect((after as { result: Observation }).result.snapshot).toContain('Clicked search');
  });
});

describe('closed shadow roots', () => {
  test('a button inside a custom element with a closed shadow root is observed and its reference acts', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures, 'closed-shadow.html');
    expect(named(page, 'button')).toEqual(['Pay now']);
    expect(page.incomplete).toBeUndefined();
    const after = await click(client, lease.lease_id, fixtures, page, 'button', 'Pay now');
    expect((after as { result: Observation }).result.snapshot).toContain('paragraph');
    expect((after as { result: Observation }).result.snapshot).toContain('Paid');
  });

  test('a declarative closed shadow root the host cannot open makes the observation say closed_shadow_root', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures, 'declarative-shadow.html');
    expect(page.snapshot).not.toContain('Hidden action');
    expect(page.incomplete).toEqual(['closed_shadow_root']);
  });
});

describe('content no person can reach', () => {
  test('behind a modal dialog the page is marked inert, a same-named button inside the dialog is not, and an act on the inert one fails not_actionable', async ({
    client,
    lease,
    fixtures,
  }) => {
    const page = await navigate(client, lease.lease_id, fixtures, 'modal.html');
    // Before the dialog opens only the inert attribute's subtree is out of reach.
    expect(
      snapshotNodes(page.snapshot)
        .filter((node) => node.inert)
        .map((node) => node.name),
    ).toEqual(['Archived action']);
    const opening = await click(client, lease.lease_id, fixtures, page, 'button', 'Open dialog');
    expect(opening, JSON.stringify(opening)).toHaveProperty('result');
    const opened = opening as { result: Observation };
    const saves = snapshotNodes(opened.result.snapshot).filter((node) => node.role === 'button' && node.name === 'Save');
    expect(saves.map((node) => node.inert)).toEqual([true, false]);
    const behind = await click(client, lease.lease_id, fixtures, opened.result, 'button', 'Save', saves[0]!.ref);
    expect(behind).toMatchObject({ error: { code: 'not_actionable' } });
    expect((behind as { error: { message: string } }).error.message).toContain('nothing was dispatched');
    const inside = (await click(client, lease.lease_id, fixtures, opened.result, 'button', 'Save', saves[1]!.ref)) as { result: Observation };
    expect(inside.result.snapshot).toContain('Saved from the dialog');
  });

  test('a visible aria-modal dialog puts the rest of the page out of reach too', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures, 'modal.html#sheet');
    const nodes = snapshotNodes(page.snapshot);
    expect(nodes.find((node) => node.name === 'Accept all')?.inert).toBe(false);
    expect(nodes.find((node) => node.name === 'Open dialog')?.inert).toBe(true);
  });
});

describe('reachability under modal dialogs, ref-like text, inert parts and declarative closed roots', () => {
  test('text inside a modal that looks like refs does not make the controls behind it reachable, and a control without a ref behind it is marked too', async ({
    client,
    lease,
    fixtures,
  }) => {
    const page = await navigate(client, lease.lease_id, fixtures, 'modal-spoof.html');
    const nodes = snapshotNodes(page.snapshot);
    expect(nodes.find((node) => node.name === 'Search')?.inert).toBe(true);
    expect(nodes.find((node) => node.name === 'Remove card')?.inert).toBe(true);
    expect(nodes.find((node) => node.name === 'Card number')?.inert).toBe(false);
    const hidden = nodes.find((node) => node.name === 'Delete');
    if (hidden) expect(hidden.inert).toBe(true);
  });

  test('with two modal dialogs open only the one on top is reachable', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures, 'stacked-modals.html');
    const nodes = snapshotNodes(page.snapshot);
    expect(nodes.find((node) => node.name === 'In the first')?.inert).toBe(true);
    expect(nodes.find((node) => node.name === 'In the second')?.inert).toBe(false);
  });

  test('empty inert elements do not use up the inert parts read', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures, 'many-inert.html');
    const nodes = snapshotNodes(page.snapshot);
    expect(nodes.find((node) => node.name === 'Dead button')?.inert).toBe(true);
    expect(nodes.find((node) => node.name === 'Live button')?.inert).toBe(false);
  });

  test('a server-rendered component asking again for its declarative closed root gets it, as without the host', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures, 'declarative-hydration.html');
    expect(page.snapshot).toContain('Hydrated: closed root');
    expect(page.snapshot).not.toContain('Hydration failed');
    // The root stays closed (the browser made it): the host says what it cannot see.
    expect(page.snapshot).not.toContain('Client button');
    expect(page.incomplete).toEqual(['closed_shadow_root']);
  });
});
