import { describe, expect } from 'vitest';
import { observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import type { ToolCallView } from '../../shared/api.ts';
import type { Condition } from '../../shared/predicate.ts';
import { connectHost } from '../support/host-client.ts';
import { blockStackTest, type Stacked, stackTest } from '../support/stack-fixture.ts';

// Postconditions and wait_for in real Chromium, evaluated by the real edge (wrangler dev) from
// ordinary observes; the fixture server counts the server-side effect of every click.

/** Opens a fixture in a new run, then clicks the named control with a postcondition (approved). */
async function openAndClick(
  { site, agent, owner }: Pick<Stacked, 'site' | 'agent' | 'owner'>,
  fixture: string,
  control: { role: string; name: string },
  postcondition: Condition,
): Promise<ToolCallView> {
  const run = await owner.createRun({ profile_id: 'postconditions', intent: `check ${fixture}`, origins: [site.origin] });
  try {
    const opened = observationOf((await agent.propose(run.id, 'browser.navigate', { url: site.url(`postconditions/${fixture}`) })).body);
    const proposal = await agent.propose(run.id, 'browser.act', {
      action: 'click',
      revision: opened.revision,
      reference: refOf(opened.snapshot, control.role, control.name),
      postcondition,
    });
    expect(proposal.status).toBe(202);
    const pending = (await owner.pendingApprovals()).find((approval) => approval.tool_call_id === proposal.body.id);
    // The owner approves the predicate along with the action.
    expect(pending?.arguments).toMatchObject({ postcondition });
    return (await owner.decide(pending!.id, 'approve')).tool_call;
  } finally {
    await agent.report(run.id, 'completed', 'checked').catch(() => undefined);
  }
}

const conditionOf = (call: ToolCallView) => observationOf(call).condition!;

const it = stackTest({ headless: false })
  /** `clickWith(fixture, control, postcondition)`: {@link openAndClick} on the file's stack and site. */
  .extend('clickWith', { scope: 'file' }, ({ site, agent, owner }) => openAndClick.bind(undefined, { site, agent, owner }));
// A tool deadline shorter than settle plus the predicate budget: the reads outlive it.
const tightDeadlineTest = blockStackTest({ headless: true, edgeVars: { TOOL_DEADLINE_MS: '6000' } });

describe('postconditions on real pages', () => {
  it('a hidden duplicate does not count: one visible Save is satisfied', async ({ clickWith }) => {
    const call = await clickWith('duplicate-buttons.html', { role: 'button', name: 'Apply' }, { success: { kind: 'control', role: 'button', name: 'Save' } });
    expect(call.state).toBe('succeeded');
    expect(conditionOf(call)).toMatchObject({ status: 'satisfied', observations: 1 });
  });

  it('two visible controls with the same role and name are ambiguous', async ({ clickWith }) => {
    const call = await clickWith(
      'duplicate-buttons.html?both=1',
      { role: 'button', name: 'Apply' },
      { success: { kind: 'control', role: 'button', name: 'Save' } },
    );
    expect(conditionOf(call).status).toBe('ambiguous');
  });

  it('a button disabled after submit satisfies a disabled control predicate', async ({ clickWith }) => {
    const call = await clickWith(
      'disable-after-submit.html',
      { role: 'button', name: 'Submit report' },
      {
        success: { kind: 'control', role: 'button', name: 'Submit report', disabled: true },
      },
    );
    expect(conditionOf(call).status).toBe('satisfied');
  });

  it('aria-checked and aria-disabled on custom controls are read as states', async ({ clickWith }) => {
    const checked = await clickWith(
      'custom-controls.html',
      { role: 'checkbox', name: 'Remember me' },
      {
        success: { kind: 'control', role: 'checkbox', name: 'Remember me', checked: true },
      },
    );
    expect(conditionOf(checked).status).toBe('satisfied');
    const archive = await clickWith(
      'custom-controls.html',
      { role: 'checkbox', name: 'Remember me' },
      {
        success: { kind: 'control', role: 'button', name: 'Archive', disabled: true },
      },
    );
    expect(conditionOf(archive).status).toBe('satisfied');
  });

  it('a toast shown 600 ms after the click and removed 1 s later is caught by the reads', async ({ clickWith }) => {
    const call = await clickWith('toast.html', { role: 'button', name: 'Save draft' }, { success: { kind: 'text', text: 'Draft saved' }, timeout_ms: 3000 });
    const condition = conditionOf(call);
    expect(condition.status).toBe('satisfied');
    expect(condition.observations).toBeGreaterThan(1);
  });

  it('success and failure both visible are ambiguous', async ({ clickWith }) => {
    const call = await clickWith(
      'messages.html?mode=both',
      { role: 'button', name: 'Pay now' },
      {
        success: { kind: 'text', text: 'Payment accepted' },
        failure: { kind: 'text', text: 'Payment declined' },
      },
    );
    expect(conditionOf(call).status).toBe('ambiguous');
  });

  it('a failure banner alone is failure_observed', async ({ clickWith }) => {
    const call = await clickWith(
      'messages.html',
      { role: 'button', name: 'Pay now' },
      {
        success: { kind: 'text', text: 'Payment accepted' },
        failure: { kind: 'text', text: 'Payment declined' },
      },
    );
    expect(conditionOf(call).status).toBe('failure_observed');
  });

  it('a row appearing in a table satisfies a row predicate', async ({ clickWith }) => {
    const call = await clickWith(
      'table-row.html',
      { role: 'button', name: 'Add order' },
      {
        success: { kind: 'row', collection: { role: 'table', name: 'Orders' }, cells: { Item: 'Widget', Qty: '3', Status: 'Pending' } },
      },
    );
    expect(conditionOf(call).status).toBe('satisfied');
  });

  it('a client-side route change is checked by location', async ({ clickWith }) => {
    const call = await clickWith(
      'route-change.html',
      { role: 'button', name: 'Open settings' },
      { success: { kind: 'location', path: '/postconditions/settings' } },
    );
    expect(conditionOf(call).status).toBe('satisfied');
  });

  it('a predicate never met is not_observed after its budget: at most 21 observations, reads at least 250 ms apart, counted on the host', async ({
    stack,
    clickWith,
  }) => {
    const host = await connectHost(stack.hostUrl, stack.hostSecret);
    try {
      const before = await host.call('host.status', {});
      const call = await clickWith(
        'never.html',
        { role: 'button', name: 'Archive everything' },
        { success: { kind: 'text', text: 'Archived' }, timeout_ms: 5000 },
      );
      const after = await host.call('host.status', {});
      expect(call.state).toBe('succeeded');
      const condition = conditionOf(call);
      expect(condition.status).toBe('not_observed');
      expect(condition.elapsed_ms).toBeGreaterThanOrEqual(4_750);
      expect(call.phases.postcondition).toMatchObject({ status: 'not_observed', observations: condition.observations });
      // The host served exactly the reads after the initial observation, no more than 20 ...
      const reads = after.observations_served - before.observations_served;
      expect(reads).toBe(condition.observations - 1);
      expect(reads).toBeGreaterThan(1);
      expect(reads).toBeLessThanOrEqual(20);
      // ... and saw them arrive at least 250 ms apart.
      const times = after.recent_observations_ms.slice(-reads);
      const gaps = times.slice(1).map((time, index) => time - times[index]!);
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(250);
    } finally {
      await host.close();
    }
  });

  it('every approved click reached the server exactly once, whatever its postcondition said', ({ site }) => {
    expect(site.effects()).toEqual({ apply: 2, submit: 1, remember: 2, save: 1, pay: 2, order: 1, route: 1, archive: 1 });
  });
});

describe('wait_for on observe', () => {
  it('waits for a predicate without acting and reports the window it read', async ({ site, agent, owner }) => {
    const run = await owner.createRun({ profile_id: 'postconditions', intent: 'wait', origins: [site.origin] });
    await agent.propose(run.id, 'browser.navigate', { url: site.url('postconditions/table-row.html') });
    const seen = observationOf(
      (
        await agent.propose(run.id, 'browser.observe', {
          wait_for: { success: { kind: 'row', collection: { role: 'table', name: 'Orders' }, cells: { Item: 'Gadget' } } },
        })
      ).body,
    );
    expect(seen.condition).toMatchObject({ status: 'satisfied', observations: 1, window_scope: seen.window.scope });
    await agent.report(run.id, 'completed', 'waited');
  });
});

describe('deadlines during condition reads', () => {
  const it = tightDeadlineTest();

  it('an act whose tool deadline expires during postcondition reads ends uncertain, not retryable, with one effect', async ({
    site,
    stack: tight,
    agent: tightAgent,
    owner: tightOwner,
  }) => {
    const run = await tightOwner.createRun({ profile_id: 'deadline', intent: 'deadline', origins: [site.origin] });
    // Start the browser on a quiet page first, so only the act races the deadline (a launch on a
    // loaded machine may itself outlast the tight deadline: try again, at most three times).
    for (let attempt = 0; attempt < 3; attempt++) {
      const warm = await tightAgent.propose(run.id, 'browser.navigate', { url: site.url('postconditions/duplicate-buttons.html') });
      if (warm.body.state === 'succeeded') break;
    }
    const opened = observationOf((await tightAgent.propose(run.id, 'browser.navigate', { url: site.url('postconditions/never.html') })).body);
    const before = site.hits('archive');
    const proposal = await tightAgent.propose(run.id, 'browser.act', {
      action: 'click',
      revision: opened.revision,
      reference: refOf(opened.snapshot, 'button', 'Archive everything'),
      postcondition: { success: { kind: 'text', text: 'Archived' }, timeout_ms: 5000 },
    });
    const call = (await tightOwner.decide(proposal.body.approval_id!, 'approve')).tool_call;
    expect(call).toMatchObject({ state: 'uncertain', retryable: false, error: { code: 'deadline_exceeded' }, result: null });
    expect(site.hits('archive')).toBe(before + 1);
    const [effects] = await tight.queryD1(`SELECT state FROM effects WHERE tool_call_id = '${call.id}'`);
    expect(effects).toEqual([{ state: 'uncertain' }]);
  });
});
