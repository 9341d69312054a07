import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { BrowserAction } from '../../shared/tool-arguments.ts';
import { hostTest } from '../support/host-fixture.ts';

// An act's prechecks (Playwright's trial run, or the element states the action needs) get at most
// HostConfig.actionabilityMs of the tool deadline: a target that does not become able to take the
// input by then fails not_actionable with Playwright's reason, nothing sent, instead of waiting out
// almost all of a 30 s call.

const test = hostTest({ actionabilityMs: 1_000 });

describe('actionability', () => {
  const cases: Array<{ name: string; action: (snapshot: string, revision: number) => BrowserAction; effect: string; reason: RegExp }> = [
    {
      name: 'a clipped 1x1 checkbox (visually hidden)',
      action: (snapshot, revision) => ({ action: 'check', revision, reference: refOf(snapshot, 'checkbox', 'Accept the terms') }),
      effect: 'terms',
      reason: /intercepts pointer events/,
    },
    {
      name: 'a button covered by another element',
      action: (snapshot, revision) => ({ action: 'click', revision, reference: refOf(snapshot, 'button', 'Buy now') }),
      effect: 'buy',
      reason: /<span id="cover"><\/span> intercepts pointer events/,
    },
    {
      name: 'a disabled button',
      action: (snapshot, revision) => ({ action: 'click', revision, reference: refOf(snapshot, 'button', 'Pay later') }),
      effect: 'later',
      reason: /element is not enabled/,
    },
  ];

  for (const { name, action, effect, reason } of cases) {
    test(`${name} fails not_actionable with Playwright's reason, nothing sent`, async ({ client, lease, fixtures }) => {
      const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('actionability/blocked.html'), timeout_ms: 15_000 });
      const response = await client.request('page.act', { lease_id: lease.lease_id, action: action(page.snapshot, page.revision), timeout_ms: 30_000 });
      expect(response).toMatchObject({ error: { code: 'not_actionable', message: expect.stringMatching(reason) } });
      expect(fixtures.hits(effect)).toBe(0);

      // Nothing changed on the page: its references still act.
      await client.call('page.act', {
        lease_id: lease.lease_id,
        action: { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Free button') },
        timeout_ms: 15_000,
      });
      expect(fixtures.hits('free')).toBeGreaterThan(0);
      expect(fixtures.hits(effect)).toBe(0);
    });
  }
});
