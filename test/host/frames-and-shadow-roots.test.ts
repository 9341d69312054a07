import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import { hostTest } from '../support/host-fixture.ts';

const test = hostTest();

// The observation is Playwright's AI-mode aria snapshot, which walks same-origin iframes (their
// refs carry a frame prefix, e.g. f1e3) and open shadow roots the way the accessibility tree
// does; closed roots made with attachShadow are opened to the host's own reads (see
// test/host/observation-marks.test.ts). References into any of them resolve and act.

describe('same-origin iframes and open shadow roots', () => {
  test('are in the snapshot, and their references act', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('frames/outer.html'), timeout_ms: 20_000 });
    expect(page.settle.outcome).toBe('dom_quiet');
    // The iframe's document, nested under the iframe node, with frame-prefixed refs.
    expect(page.snapshot).toMatch(
      /- iframe \[ref=\w+\]:\n\s+- generic \[ref=\w+\]:\n\s+- paragraph \[ref=\w+\]: Card ending 4242\n\s+- button "Pay now" \[ref=f\d+e\d+\]/,
    );
    // The open shadow root's content, as part of the page.
    expect(page.snapshot).toMatch(/- region "Account" \[ref=\w+\]:\n\s+- paragraph \[ref=\w+\]: Balance 120 EUR\n\s+- button "Top up" \[ref=\w+\]/);
    // The closed root's content too: a person sees it.
    expect(page.snapshot).toContain('Sealed text');

    const paid = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Pay now') },
      timeout_ms: 20_000,
    });
    expect(fixtures.hits('frame-pay')).toBe(1);
    await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: paid.revision, reference: refOf(paid.snapshot, 'button', 'Top up') },
      timeout_ms: 20_000,
    });
    expect(fixtures.hits('top-up')).toBe(1);
  });
});
