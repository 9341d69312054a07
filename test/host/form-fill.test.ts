import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { Observation } from '../../shared/observation.ts';
import type { ExpectedElement } from '../../shared/protocol.ts';
import type { FormField } from '../../shared/tool-arguments.ts';
import type { HostClient } from '../support/host-client.ts';
import { hostTest } from '../support/host-fixture.ts';

const test = hostTest();

function navigate(client: HostClient, leaseId: string, url: string): Promise<Observation> {
  return client.call('page.navigate', { lease_id: leaseId, url, timeout_ms: 15_000 });
}

/** The six fields of the sign-up form as the observation names them, and what each gets. */
const FIELDS: readonly { role: string; name: string; value: string | boolean }[] = [
  { role: 'textbox', name: 'First name', value: 'Ada' },
  { role: 'textbox', name: 'Last name', value: 'Lovelace' },
  { role: 'combobox', name: 'Country', value: 'France' },
  { role: 'checkbox', name: 'I accept the terms', value: true },
  { role: 'radio', name: 'Pro', value: true },
  { role: 'textbox', name: 'Comments', value: 'Hello there' },
];

/** The fill_form fields and the expectations the edge would send for them, read from `page`. */
function formOf(page: Observation, origin: string): { fields: FormField[]; elements: ExpectedElement[] } {
  const fields = FIELDS.map(({ role, name, value }) => ({ reference: refOf(page.snapshot, role, name), value }));
  const elements = FIELDS.map(({ role, name }, index) => ({ reference: fields[index]!.reference, role, name, frame_origin: origin }));
  const send = refOf(page.snapshot, 'button', 'Send');
  return { fields, elements: [...elements, { reference: send, role: 'button', name: 'Send', frame_origin: origin }] };
}

describe('fill_form', () => {
  test('six fields of four kinds filled in one act, then submitted: the result shows every value', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/six-field-form.html'));
    const { fields, elements } = formOf(page, fixtures.origin);
    const before = fixtures.hits('signup');
    const after = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: {
        action: 'fill_form',
        revision: page.revision,
        reference: fields[0]!.reference,
        fields,
        submit_reference: refOf(page.snapshot, 'button', 'Send'),
      },
      target: { role: 'textbox', name: 'First name', frame_origin: fixtures.origin },
      elements,
      timeout_ms: 15_000,
    });
    expect(after.revision).toBe(page.revision + 1);
    expect(after.snapshot).toContain('Sent: Ada Lovelace, fr, terms yes, plan pro, comments Hello there');
    expect(fixtures.hits('signup')).toBe(before + 1);
  });

  test('a select takes an option by its value as well as its label, and submit_key presses on the last field', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/six-field-form.html'));
    const first = refOf(page.snapshot, 'textbox', 'First name');
    const after = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: {
        action: 'fill_form',
        revision: page.revision,
        reference: first,
        fields: [
          { reference: first, value: 'Grace' },
          { reference: refOf(page.snapshot, 'combobox', 'Country'), value: 'uk' },
          { reference: refOf(page.snapshot, 'textbox', 'Last name'), value: 'Hopper' },
        ],
        submit_key: 'Enter',
      },
      timeout_ms: 15_000,
    });
    expect(after.snapshot).toContain('Sent: Grace Hopper, uk, terms no, plan basic, comments');
  });

  test('a field relabelled after the observation fails target_changed, naming it, and no field is typed', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/six-field-form.html?swap_after_ms=2000'));
    const { fields, elements } = formOf(page, fixtures.origin);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const before = fixtures.hits('signup');
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: {
        action: 'fill_form',
        revision: page.revision,
        reference: fields[0]!.reference,
        fields,
        submit_reference: refOf(page.snapshot, 'button', 'Send'),
      },
      target: { role: 'textbox', name: 'First name', frame_origin: fixtures.origin },
      elements,
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'target_changed', message: expect.stringMatching(/^field 6 .*nothing was dispatched$/) } });
    const now = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(now.snapshot).toContain('Touched 0');
    expect(now.snapshot).toContain('Not sent');
    expect(now.snapshot).toMatch(/textbox "First name" \[ref=\w+\]$/m);
    expect(now.snapshot).not.toMatch(/checkbox "I accept the terms" \[checked\]/);
    expect(fixtures.hits('signup')).toBe(before);
  });

  test('a field relabelled while the act waited for its submit button to enable fails target_changed: every field is checked again, none typed', async ({
    client,
    lease,
    fixtures,
  }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/six-field-form.html?late_submit_ms=2500'));
    const { fields, elements } = formOf(page, fixtures.origin);
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: {
        action: 'fill_form',
        revision: page.revision,
        reference: fields[0]!.reference,
        fields,
        submit_reference: refOf(page.snapshot, 'button', 'Send'),
      },
      target: { role: 'textbox', name: 'First name', frame_origin: fixtures.origin },
      elements,
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'target_changed', message: expect.stringMatching(/^field 6 .*nothing was dispatched$/) } });
    const now = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(now.snapshot).toContain('Touched 0');
    expect(now.snapshot).toContain('Not sent');
  });

  test('false for a radio button is action_failed before any field is typed', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/six-field-form.html'));
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: {
        action: 'fill_form',
        revision: page.revision,
        reference: refOf(page.snapshot, 'textbox', 'First name'),
        fields: [
          { reference: refOf(page.snapshot, 'textbox', 'First name'), value: 'Ada' },
          { reference: refOf(page.snapshot, 'radio', 'Basic'), value: false },
        ],
      },
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'action_failed', message: expect.stringMatching(/^fill_form field 2 .*nothing was dispatched$/) } });
    const now = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(now.snapshot).toContain('Touched 0');
  });

  test('a value of the wrong kind (text for a checkbox) or an option the select lacks is action_failed and nothing is typed', async ({
    client,
    lease,
    fixtures,
  }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/six-field-form.html'));
    const first = refOf(page.snapshot, 'textbox', 'First name');
    for (const [reference, value] of [
      [refOf(page.snapshot, 'checkbox', 'I accept the terms'), 'yes'],
      [refOf(page.snapshot, 'combobox', 'Country'), 'Atlantis'],
      [refOf(page.snapshot, 'button', 'Send'), 'x'],
    ] as const) {
      const response = await client.request('page.act', {
        lease_id: lease.lease_id,
        action: {
          action: 'fill_form',
          revision: page.revision,
          reference: first,
          fields: [
            { reference: first, value: 'Ada' },
            { reference, value },
          ],
        },
        timeout_ms: 15_000,
      });
      expect(response).toMatchObject({ error: { code: 'action_failed', message: expect.stringMatching(/^fill_form field 2 .*nothing was dispatched$/) } });
    }
    const now = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(now.snapshot).toContain('Touched 0');
  });
});
