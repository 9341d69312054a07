import { describe, expect } from 'vitest';
import { observationOf } from '../../scripts/api-client.ts';
import { refOf, snapshotNodes } from '../../scripts/aria-refs.ts';
import { PolicyProfileView } from '../../shared/policy.ts';
import { type Acted, actApproved, approvalsAsked, finish, HANDS_VERSION, observePage, openPage } from '../support/hands.ts';
import { stackTest } from '../support/stack-fixture.ts';
import { until } from '../support/until.ts';

// Issue 33's hands, end to end through the HTTP API: the real edge (wrangler dev), the real host
// (Chromium), fixture pages built with real libraries (SortableJS from npm for the drag). Every
// act's effect is checked by its postcondition, and the fixture server counts what reached it.

const it = stackTest({ headless: true });

const conditionOf = (acted: Acted) => observationOf(acted.call).condition;

/** The snapshot line of the one node with this role and name. */
function lineOf(snapshot: string, role: string, name: string): string {
  const matches = snapshotNodes(snapshot).filter((node) => node.role === role && node.name === name);
  if (matches.length !== 1) throw new Error(`expected one ${role} "${name}", found ${matches.length}`);
  return matches[0]!.line;
}

/** The names of the cells of a table's body, in order. */
function cellNames(snapshot: string, names: readonly string[]): string[] {
  return snapshotNodes(snapshot)
    .filter((node) => node.role === 'cell' && names.includes(node.name ?? ''))
    .map((node) => node.name!);
}

describe('hover', () => {
  it('runs unasked under the default profile: the menu opens, its postcondition sees the button expanded, nothing is clicked', async ({
    site,
    agent,
    owner,
  }) => {
    const run = await owner.createRun({ profile_id: 'hands-hover', intent: 'open the account menu', origins: [site.origin] });
    try {
      const page = await openPage(agent, run.id, site.url('e2e-hands/menu.html'));
      expect(page.snapshot).not.toContain('menuitem "Orders"');
      const account = refOf(page.snapshot, 'button', 'Account');
      // 1.4.0 keeps its shapes: it knows no hover.
      const old = await agent.raw('POST', `/v1/runs/${run.id}/tool-calls`, {
        tool: 'browser.act',
        version: '1.4.0',
        arguments: { action: 'hover', revision: page.revision, reference: account },
      });
      expect(old.status).toBe(400);
      const proposal = await agent.propose(
        run.id,
        'browser.act',
        {
          action: 'hover',
          revision: page.revision,
          reference: account,
          postcondition: { success: { kind: 'control', role: 'button', name: 'Account', expanded: true } },
        },
        HANDS_VERSION,
      );
      expect(proposal.status).toBe(200);
      expect(proposal.body).toMatchObject({ state: 'succeeded', approval_id: null, phases: { decision: { effect: 'allow', rule: 'act.bounded_hover' } } });
      const hovered = observationOf(proposal.body);
      expect(hovered.condition?.status).toBe('satisfied');
      expect(hovered.snapshot).toContain('menuitem "Orders"');
      expect(await approvalsAsked(owner, run.id)).toBe(0);
      expect(site.hits('account-click')).toBe(0);
    } finally {
      await finish(agent, run);
    }
  });
});

describe('drag', () => {
  it('a SortableJS row dragged onto another moves there: the approval names both elements, the row predicate sees the new order', async ({
    site,
    agent,
    owner,
  }) => {
    const run = await owner.createRun({ profile_id: 'hands-drag', intent: 'put Gamma first', origins: [site.origin] });
    try {
      const page = await openPage(agent, run.id, site.url('e2e-hands/cards.html'));
      expect(cellNames(page.snapshot, ['Alpha', 'Beta', 'Gamma'])).toEqual(['Alpha', 'Beta', 'Gamma']);
      const dragged = await actApproved({ agent, owner }, run.id, {
        action: 'drag',
        revision: page.revision,
        reference: refOf(page.snapshot, 'cell', 'Gamma'),
        to_reference: refOf(page.snapshot, 'cell', 'Alpha'),
        postcondition: { success: { kind: 'row', collection: { role: 'table', name: 'Board' }, cells: { Position: '1', Card: 'Gamma' } } },
      });
      expect(dragged.approval?.summary).toBe(`Drag the cell "Gamma" onto the cell "Alpha" on "Cards" (${site.url('e2e-hands/cards.html')})`);
      expect(dragged.approval?.target).toMatchObject({ role: 'cell', name: 'Gamma', destination: { role: 'cell', name: 'Alpha', frame_origin: site.origin } });
      expect(dragged.call.state, JSON.stringify(dragged.call.error)).toBe('succeeded');
      expect(conditionOf(dragged)?.status).toBe('satisfied');
      expect(cellNames(observationOf(dragged.call).snapshot, ['Alpha', 'Beta', 'Gamma'])).toEqual(['Gamma', 'Alpha', 'Beta']);
      expect(site.hits('reorder')).toBe(1);
    } finally {
      await finish(agent, run);
    }
  });
});

describe('fill_form', () => {
  it('six fields and a submit in one call: the owner is asked once, the approval lists every field, the submitted values are what was asked', async ({
    site,
    agent,
    owner,
  }) => {
    const run = await owner.createRun({ profile_id: 'hands-form', intent: 'sign me up as Ada Lovelace', origins: [site.origin] });
    try {
      const page = await openPage(agent, run.id, site.url('e2e-hands/sign-up.html'));
      const ref = (role: string, name: string) => refOf(page.snapshot, role, name);
      const filled = await actApproved({ agent, owner }, run.id, {
        action: 'fill_form',
        revision: page.revision,
        fields: [
          { reference: ref('textbox', 'First name'), value: 'Ada' },
          { reference: ref('textbox', 'Last name'), value: 'Lovelace' },
          { reference: ref('textbox', 'Email'), value: 'ada@example.test' },
          { reference: ref('combobox', 'Country'), value: 'France' },
          { reference: ref('checkbox', 'I accept the terms'), value: true },
          { reference: ref('radio', 'Pro'), value: true },
        ],
        submit_reference: ref('button', 'Create account'),
        postcondition: { success: { kind: 'text', text: 'Submitted: Ada Lovelace, ada@example.test, fr, terms yes, plan pro' } },
      });
      expect(await approvalsAsked(owner, run.id)).toBe(1);
      expect(filled.approval?.summary).toBe(
        `Fill in a form on "Sign up" (${site.url('e2e-hands/sign-up.html')}): ` +
          [
            'Type "Ada" into the textbox "First name"',
            'Type "Lovelace" into the textbox "Last name"',
            'Type "ada@example.test" into the textbox "Email"',
            'Select "France" in the combobox "Country"',
            'Check the checkbox "I accept the terms"',
            'Check the radio "Pro"',
            'Click the button "Create account"',
          ].join('; '),
      );
      expect(filled.approval?.target?.fields?.map((field) => [field.role, field.name, field.value])).toEqual([
        ['textbox', 'First name', 'Ada'],
        ['textbox', 'Last name', 'Lovelace'],
        ['textbox', 'Email', 'ada@example.test'],
        ['combobox', 'Country', 'France'],
        ['checkbox', 'I accept the terms', true],
        ['radio', 'Pro', true],
      ]);
      expect(filled.call.state, JSON.stringify(filled.call.error)).toBe('succeeded');
      expect(conditionOf(filled)?.status).toBe('satisfied');
      expect(site.hits('sign-up')).toBe(1);
      // Each field holds its value, as the new control predicates read them.
      for (const success of [
        { kind: 'control', role: 'textbox', name: 'First name', value: 'Ada' },
        { kind: 'control', role: 'textbox', name: 'Email', value: 'ada@example.test' },
        { kind: 'control', role: 'checkbox', name: 'I accept the terms', checked: true },
        { kind: 'control', role: 'radio', name: 'Pro', checked: true },
        { kind: 'control', role: 'radio', name: 'Free', checked: false },
      ]) {
        expect((await observePage(agent, run.id, { wait_for: { success, timeout_ms: 0 } })).condition?.status, JSON.stringify(success)).toBe('satisfied');
      }
      // A value the field does not hold is not satisfied.
      const wrong = await observePage(agent, run.id, {
        wait_for: { success: { kind: 'control', role: 'textbox', name: 'Last name', value: 'Byron' }, timeout_ms: 0 },
      });
      expect(wrong.condition?.status).toBe('not_observed');
    } finally {
      await finish(agent, run);
    }
  });

  it('a field relabelled after the observation fails target_changed before any input: no field is typed into, nothing is submitted', async ({
    site,
    agent,
    owner,
  }) => {
    const run = await owner.createRun({ profile_id: 'hands-form-swap', intent: 'sign me up', origins: [site.origin] });
    try {
      const before = { relabelled: site.hits('relabelled'), submitted: site.hits('sign-up') };
      const page = await openPage(agent, run.id, site.url('e2e-hands/sign-up.html?relabel_on=relabel-now'));
      const ref = (role: string, name: string) => refOf(page.snapshot, role, name);
      // The page relabels Email as "Backup phone" after the agent observed it, when told to.
      await fetch(site.url('effects/relabel-now'), { method: 'POST' });
      await until(() => site.hits('relabelled') > before.relabelled, 'the page to relabel its Email field', 10_000);
      const filled = await actApproved({ agent, owner }, run.id, {
        action: 'fill_form',
        revision: page.revision,
        fields: [
          { reference: ref('textbox', 'First name'), value: 'Ada' },
          { reference: ref('textbox', 'Last name'), value: 'Lovelace' },
          { reference: ref('textbox', 'Email'), value: 'ada@example.test' },
          { reference: ref('checkbox', 'I accept the terms'), value: true },
        ],
        submit_reference: ref('button', 'Create account'),
      });
      // The owner approved what the observation showed: an Email field.
      expect(filled.approval?.summary).toContain('Type "ada@example.test" into the textbox "Email"');
      expect(filled.call).toMatchObject({ state: 'failed', error: { code: 'target_changed' } });
      const after = await observePage(agent, run.id);
      expect(lineOf(after.snapshot, 'textbox', 'Backup phone')).toBeDefined();
      for (const name of ['First name', 'Last name', 'Backup phone']) expect(lineOf(after.snapshot, 'textbox', name), name).not.toMatch(/\]:\s*\S/);
      expect(lineOf(after.snapshot, 'checkbox', 'I accept the terms')).not.toContain('[checked');
      expect(site.hits('sign-up')).toBe(before.submitted);
    } finally {
      await finish(agent, run);
    }
  });
});

describe('the hover rule is the default profile’s alone', () => {
  it('under a published default without act.bounded_hover, a hover asks the owner, in words', async ({ site, agent, owner, operator }) => {
    const inForce = (await operator.request('GET', '/v1/policy-profiles/default', PolicyProfileView)).body;
    const withoutHover = { rules: inForce.rules.filter((rule) => rule.condition !== 'bounded_browser_hover'), denies: inForce.denies };
    expect(withoutHover.rules.length).toBe(inForce.rules.length - 1);
    await operator.request('POST', '/v1/policy-profiles/default', PolicyProfileView, withoutHover, [201]);
    const run = await owner.createRun({ profile_id: 'hands-hover-asked', intent: 'open the account menu', origins: [site.origin] });
    try {
      const page = await openPage(agent, run.id, site.url('e2e-hands/menu.html'));
      const hovered = await actApproved({ agent, owner }, run.id, {
        action: 'hover',
        revision: page.revision,
        reference: refOf(page.snapshot, 'button', 'Account'),
        postcondition: { success: { kind: 'control', role: 'button', name: 'Account', expanded: true } },
      });
      expect(hovered.approval?.summary).toBe(`Hover over the button "Account" on "Hover menu" (${site.url('e2e-hands/menu.html')})`);
      expect(hovered.call.state, JSON.stringify(hovered.call.error)).toBe('succeeded');
      expect(conditionOf(hovered)?.status).toBe('satisfied');
    } finally {
      await finish(agent, run);
      await operator.request('POST', '/v1/policy-profiles/default', PolicyProfileView, { rules: inForce.rules, denies: inForce.denies }, [201]);
    }
  });
});
