import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { Observation } from '../../shared/observation.ts';
import { Condition } from '../../shared/predicate.ts';
import { conditionStatus } from '../../shared/predicate-evaluation.ts';
import type { BrowserAction } from '../../shared/tool-arguments.ts';
import type { HostClient } from '../support/host-client.ts';
import { hostTest } from '../support/host-fixture.ts';

// The control predicate's states (selected, expanded, pressed, value) read from observations the
// host really takes of real widgets: Bootstrap 5 tabs, accordion and toggle buttons (the library's
// own plugins move aria-selected, aria-expanded and aria-pressed), a date input, a text input, a
// select and a number input, in real Chromium. Each state is read before and after a real act
// changes it, so a reading that ignored the state would fail one of the two.

const test = hostTest();

/** The status of a control predicate on an observation. */
function control(observation: Observation, role: string, name: string, state: Record<string, unknown>): string {
  return conditionStatus(Condition.parse({ success: { kind: 'control', role, name, ...state } }), observation);
}

function act(client: HostClient, leaseId: string, action: BrowserAction): Promise<Observation> {
  return client.call('page.act', { lease_id: leaseId, action, timeout_ms: 15_000 });
}

/** Acts, then observes until `settled` holds (Bootstrap's transitions end a little after the act's settle). */
async function actUntil(client: HostClient, leaseId: string, action: BrowserAction, settled: (o: Observation) => boolean): Promise<Observation> {
  let observation = await act(client, leaseId, action);
  for (let attempt = 0; attempt < 20 && !settled(observation); attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    observation = await client.call('page.observe', { lease_id: leaseId, timeout_ms: 15_000 });
  }
  return observation;
}

describe('control states read from real widgets', () => {
  test('a Bootstrap tab is selected, and the other is not, before and after a click moves the selection', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('widgets/control-states.html'), timeout_ms: 15_000 });
    expect(control(page, 'tab', 'Profile', { selected: true })).toBe('satisfied');
    expect(control(page, 'tab', 'Billing', { selected: false })).toBe('satisfied');
    expect(control(page, 'tab', 'Billing', { selected: true })).toBe('not_observed');

    const reference = refOf(page.snapshot, 'tab', 'Billing');
    const after = await actUntil(client, lease.lease_id, { action: 'click', revision: page.revision, reference }, (o) => o.snapshot.includes('Billing pane'));
    expect(control(after, 'tab', 'Billing', { selected: true })).toBe('satisfied');
    expect(control(after, 'tab', 'Profile', { selected: false })).toBe('satisfied');
    expect(control(after, 'tab', 'Profile', { selected: true })).toBe('not_observed');
  });

  test('an accordion header is expanded only while its panel is open; collapsed shows no signal, so expanded false is never claimed', async ({
    client,
    lease,
    fixtures,
  }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('widgets/control-states.html'), timeout_ms: 15_000 });
    expect(control(page, 'button', 'Contact details', { expanded: true })).toBe('satisfied');
    expect(control(page, 'button', 'Shipping details', { expanded: true })).toBe('not_observed');
    // aria-expanded="false" and no aria-expanded at all print the same line: false is not evidence.
    expect(control(page, 'button', 'Shipping details', { expanded: false })).toBe('not_observed');
    expect(control(page, 'button', 'Print', { expanded: false })).toBe('not_observed');

    const reference = refOf(page.snapshot, 'button', 'Shipping details');
    const after = await actUntil(
      client,
      lease.lease_id,
      { action: 'click', revision: page.revision, reference },
      (o) => o.snapshot.includes('Shipping body') && !o.snapshot.includes('Contact body'),
    );
    expect(control(after, 'button', 'Shipping details', { expanded: true })).toBe('satisfied');
    expect(control(after, 'button', 'Contact details', { expanded: true })).toBe('not_observed');
  });

  test('a toggle button is pressed only with aria-pressed true; unpressed, mixed and plain buttons are never claimed unpressed', async ({
    client,
    lease,
    fixtures,
  }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('widgets/control-states.html'), timeout_ms: 15_000 });
    expect(control(page, 'button', 'Bold', { pressed: true })).toBe('satisfied');
    expect(control(page, 'button', 'Italic', { pressed: true })).toBe('not_observed');
    expect(control(page, 'button', 'Italic', { pressed: false })).toBe('not_observed');
    expect(control(page, 'button', 'Underline', { pressed: true })).toBe('not_observed');
    expect(control(page, 'button', 'Underline', { pressed: false })).toBe('not_observed');
    expect(control(page, 'button', 'Print', { pressed: false })).toBe('not_observed');

    const reference = refOf(page.snapshot, 'button', 'Italic');
    const after = await actUntil(
      client,
      lease.lease_id,
      { action: 'click', revision: page.revision, reference },
      (o) => control(o, 'button', 'Italic', { checked: true }) === 'satisfied',
    );
    expect(control(after, 'button', 'Italic', { pressed: true })).toBe('satisfied');
  });

  test('a date field, a number field, a select and a text field hold exactly their values, before and after input', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('widgets/control-states.html'), timeout_ms: 15_000 });
    expect(control(page, 'textbox', 'Day', { value: '2026-12-15' })).toBe('satisfied');
    expect(control(page, 'textbox', 'Day', { value: '2026-12-16' })).toBe('not_observed');
    expect(control(page, 'spinbutton', 'Quantity', { value: '3' })).toBe('satisfied');
    expect(control(page, 'combobox', 'Country', { value: 'Germany' })).toBe('satisfied');
    expect(control(page, 'combobox', 'Country', { value: 'France' })).toBe('not_observed');
    // An empty field with a placeholder holds the empty string, not its placeholder.
    expect(control(page, 'textbox', 'City', { value: '' })).toBe('satisfied');
    expect(control(page, 'textbox', 'City', { value: 'Town' })).toBe('not_observed');

    const selected = await act(client, lease.lease_id, {
      action: 'select',
      revision: page.revision,
      reference: refOf(page.snapshot, 'combobox', 'Country'),
      value: 'Italy',
    });
    expect(control(selected, 'combobox', 'Country', { value: 'Italy' })).toBe('satisfied');
    expect(control(selected, 'combobox', 'Country', { value: 'Germany' })).toBe('not_observed');

    const typed = await act(client, lease.lease_id, {
      action: 'type',
      revision: selected.revision,
      reference: refOf(selected.snapshot, 'textbox', 'City'),
      text: 'Paris',
    });
    expect(control(typed, 'textbox', 'City', { value: 'Paris' })).toBe('satisfied');
    expect(control(typed, 'textbox', 'City', { value: '' })).toBe('not_observed');
  });
});
