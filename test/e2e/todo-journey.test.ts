import { describe, expect } from 'vitest';
import { observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import { EDGE_RUNTIMES } from '../../scripts/local-stack.ts';
import { type JourneyRecord, runTodoJourney } from '../../scripts/todo-journey.ts';
import { stackTestPerRuntime } from '../support/stack-fixture.ts';

// Real processes: the browser host (headed Chromium under Xvfb) and the edge with a fresh
// database, driven over HTTP exactly as the demo agent drives them. The same body runs against
// each runtime of the edge: `wrangler dev` with a local D1, Node and Deno over a SQLite file.

const journeyTest = stackTestPerRuntime(EDGE_RUNTIMES);

describe.each(EDGE_RUNTIMES)('the demo journey end to end, edge on %s', (runtime) => {
  const it = journeyTest(runtime);
  let journey: JourneyRecord;

  /** The revision of the journey's last observation. */
  const lastRevision = () => observationOf(journey.steps[journey.steps.length - 1]!.finished).revision;

  it.beforeAll(async ({ stack }) => {
    journey = await runTodoJourney(stack);
  });

  it('navigates and observes without asking anyone, and settles the navigation', ({ stack }) => {
    const [open, observe] = journey.steps;
    expect(open).toMatchObject({
      proposalStatus: 200,
      finished: { state: 'succeeded', phases: { decision: { effect: 'allow', rule: 'navigate.run_origins' } } },
    });
    expect(observationOf(open!.finished)).toMatchObject({ url: stack.todoUrl, title: 'VanillaJS • TodoMVC' });
    expect(['dom_quiet', 'bound_expired']).toContain(observationOf(open!.finished).settle.outcome);
    expect(observationOf(observe!.finished).settle).toEqual({ outcome: 'not_waited', elapsed_ms: 0, pending_at_entry: 0, overflow: false });
    expect(observationOf(observe!.finished).snapshot).toContain('textbox "What needs to be done?"');
  });

  it('a bounded scroll runs without asking anyone', () => {
    const scroll = journey.steps.find((step) => step.label.startsWith('scroll'))!;
    expect(scroll.proposalStatus).toBe(200);
    expect(scroll.finished).toMatchObject({ state: 'succeeded', phases: { decision: { effect: 'allow', rule: 'act.bounded_scroll', tainted: true } } });
    expect(scroll.approval).toBeUndefined();
  });

  it('every other act waits for the owner, then dispatches once with a watermark, a settle report and a satisfied postcondition', () => {
    const acts = journey.steps.filter((step) => step.proposed.tool === 'browser.act' && !step.label.startsWith('scroll'));
    expect(acts).toHaveLength(2);
    for (const act of acts) {
      expect(act.proposalStatus).toBe(202);
      expect(act.proposed).toMatchObject({ state: 'waiting_for_approval', phases: { decision: { effect: 'approval', rule: 'act.approval' } } });
      expect(act.approval).toMatchObject({ state: 'approved', tool_call_id: act.proposed.id });
      // The owner was asked in words, about the target as the observation showed it.
      expect(act.approval?.summary).toMatch(
        /^(Type "[^"]+" into the textbox "What needs to be done\?" and press Enter|Click the checkbox .+) on "VanillaJS • TodoMVC" \(/,
      );
      expect(act.finished.state).toBe('succeeded');
      expect(act.finished.phases.watermark?.effect_id).toMatch(/^eff_/);
      expect(act.finished.phases.settle?.elapsed_ms).toBeLessThanOrEqual(2_500);
      expect(observationOf(act.finished).condition).toMatchObject({ status: 'satisfied' });
      expect(observationOf(act.finished).revision).toBeGreaterThan((act.proposed.arguments as { revision: number }).revision);
    }
  });

  it('the page shows the todo, then shows it ticked', () => {
    const listed = observationOf(journey.steps.find((step) => step.label.includes('is listed'))!.finished).snapshot;
    const done = observationOf(journey.steps.find((step) => step.label.includes('is done'))!.finished).snapshot;
    expect(listed).toContain(journey.todo);
    expect(done).toMatch(/checkbox \[checked\]/);
  });

  it('the run ends completed with the report', () => {
    expect(journey.finalRun).toMatchObject({ state: 'completed', latest_revision: lastRevision() });
    expect(journey.finalRun.summary).toContain(journey.todo);
  });

  it('the database holds exactly the rows the journey implies', async ({ stack }) => {
    const id = journey.run.id;
    const [runRows, callRows, approvalRows, effectRows] = await stack.queryD1(
      `SELECT state, latest_revision, lease_id FROM runs WHERE id = '${id}'`,
      `SELECT tool, state, decision_effect FROM tool_calls WHERE run_id = '${id}' ORDER BY created_at`,
      `SELECT state, decided_by FROM approvals WHERE run_id = '${id}'`,
      `SELECT e.state, e.committed_at <= c.updated_at AS before_finish FROM effects e JOIN tool_calls c ON c.id = e.tool_call_id WHERE e.run_id = '${id}'`,
    );
    expect(runRows).toEqual([{ state: 'completed', latest_revision: lastRevision(), lease_id: null }]);
    expect(callRows).toEqual([
      { tool: 'browser.navigate', state: 'succeeded', decision_effect: 'allow' },
      { tool: 'browser.observe', state: 'succeeded', decision_effect: 'allow' },
      { tool: 'browser.act', state: 'succeeded', decision_effect: 'allow' },
      { tool: 'browser.act', state: 'succeeded', decision_effect: 'approval' },
      { tool: 'browser.observe', state: 'succeeded', decision_effect: 'allow' },
      { tool: 'browser.act', state: 'succeeded', decision_effect: 'approval' },
      { tool: 'browser.observe', state: 'succeeded', decision_effect: 'allow' },
    ]);
    expect(approvalRows).toEqual([
      { state: 'approved', decided_by: 'prn_local_owner' },
      { state: 'approved', decided_by: 'prn_local_owner' },
    ]);
    expect(effectRows).toEqual([
      { state: 'succeeded', before_finish: 1 },
      { state: 'succeeded', before_finish: 1 },
      { state: 'succeeded', before_finish: 1 },
    ]);
  });

  it('an act on an old revision is refused before approval and nothing reaches the page', async ({ stack, agent, owner }) => {
    const run = await owner.createRun({
      profile_id: 'e2e-stale',
      intent: 'stale check',
      origins: [stack.siteOrigin],
    });
    const opened = await agent.propose(run.id, 'browser.navigate', { url: stack.todoUrl });
    const old = observationOf(opened.body);
    const fresh = observationOf((await agent.propose(run.id, 'browser.observe', {})).body);
    expect(fresh.revision).toBe(old.revision + 1);
    const stale = await agent.raw('POST', `/v1/runs/${run.id}/tool-calls`, {
      tool: 'browser.act',
      version: '1.2.0',
      arguments: { action: 'type', revision: old.revision, reference: refOf(old.snapshot, 'textbox', 'What needs to be done?'), text: 'never', submit: true },
    });
    expect(stale).toMatchObject({ status: 409, body: { error: { code: 'stale_revision' } } });
    const after = observationOf((await agent.propose(run.id, 'browser.observe', {})).body);
    expect(after.snapshot).not.toContain('never');
    expect(await stack.queryD1(`SELECT count(*) AS n FROM effects WHERE run_id = '${run.id}'`)).toEqual([[{ n: 0 }]]);
  });
});
