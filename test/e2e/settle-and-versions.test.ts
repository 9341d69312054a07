import { describe, expect } from 'vitest';
import { observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import type { LocalStack } from '../../scripts/local-stack.ts';
import type { ToolCallView } from '../../shared/api.ts';
import { SettleReport, ToolResultV1_1 } from '../../shared/observation.ts';
import { type Stacked, stackTest } from '../support/stack-fixture.ts';

// The settle report (ADR-0159) end to end: from the real host through the real edge (wrangler
// dev) onto the observation and into the call's phases in D1; calls pinned to 1.1.0 answered in
// the 1.1.0 shape; continuation cursors the host did not issue, or for an older revision, ending
// with clear codes; and an act whose evidence is lost ending uncertain, never retried.

// A 10 s tool deadline: ample for these pages, and short enough for a page that hangs longer.
const it = stackTest({ headless: true, edgeVars: { TOOL_DEADLINE_MS: '10000' } });

/**
 * Runs `steps` in a run the owner asked for (so the agent's turn has the owner's authority), then
 * ends it with a report, which releases the run's lease on the profile for the next test.
 */
async function inRun({ site, agent, owner }: Pick<Stacked, 'site' | 'agent' | 'owner'>, intent: string, steps: (run: string) => Promise<void>): Promise<void> {
  const run = (await owner.createRun({ profile_id: 'settle-e2e', intent, origins: [site.origin] })).id;
  try {
    await steps(run);
  } finally {
    await agent.report(run, 'completed', intent).catch(() => undefined);
  }
}

/** The stored phases and result of calls, from D1 itself. */
async function storedCalls(stack: LocalStack, ids: string[]): Promise<Map<string, { phases: { settle?: unknown }; result: { settle?: unknown } | null }>> {
  const [rows] = await stack.queryD1(`SELECT id, phases, result FROM tool_calls WHERE id IN (${ids.map((id) => `'${id}'`).join(', ')})`);
  return new Map(
    (rows ?? []).map((row) => [
      String(row.id),
      {
        phases: JSON.parse(String(row.phases)) as { settle?: unknown },
        result: row.result === null ? null : (JSON.parse(String(row.result)) as { settle?: unknown }),
      },
    ]),
  );
}

describe('the settle report end to end', () => {
  it('outcome, elapsed ms, pending at entry, overflow and expired_by are on the observation and in the phases in D1', async ({ stack, site, agent, owner }) => {
    await inRun({ site, agent, owner }, 'settle reports', async (run) => {
      const pages = {
        quiet: 'settle/delayed-spa.html',
        deadline: 'settle/ticking-clock.html',
        overflow: 'settle/fetch-burst.html?on-load=1',
      };
      const calls: Record<string, ToolCallView> = {};
      for (const [name, page] of Object.entries(pages)) {
        calls[name] = (await agent.propose(run, 'browser.navigate', { url: site.url(page) })).body;
      }
      expect(observationOf(calls.quiet!).settle).toMatchObject({ outcome: 'dom_quiet', pending_at_entry: 2, overflow: false });
      expect(observationOf(calls.deadline!).settle).toMatchObject({ outcome: 'bound_expired', expired_by: 'deadline', overflow: false });
      expect(observationOf(calls.overflow!).settle).toMatchObject({ outcome: 'bound_expired', expired_by: 'overflow', overflow: true, pending_at_entry: 256 });

      const stored = await storedCalls(
        stack,
        Object.values(calls).map((call) => call.id),
      );
      for (const call of Object.values(calls)) {
        const settle = observationOf(call).settle;
        // The API's phases, D1's phases and D1's stored observation all carry the same report.
        expect(call.phases.settle).toEqual(settle);
        expect(stored.get(call.id)?.phases.settle).toEqual(settle);
        expect(stored.get(call.id)?.result?.settle).toEqual(settle);
        expect(SettleReport.safeParse(stored.get(call.id)?.phases.settle).success).toBe(true);
      }
    });
  });

  it("an act's settle report counts the request the click started and reaches D1", async ({ stack, site, agent, owner }) => {
    await inRun({ site, agent, owner }, 'click fetch', async (run) => {
      const page = observationOf((await agent.propose(run, 'browser.navigate', { url: site.url('settle/click-fetch.html') })).body);
      const proposal = await agent.propose(run, 'browser.act', {
        action: 'click',
        revision: page.revision,
        reference: refOf(page.snapshot, 'button', 'Load value'),
      });
      expect(proposal.status).toBe(202);
      const call = (await owner.decide(proposal.body.approval_id!, 'approve')).tool_call;
      expect(call.state).toBe('succeeded');
      expect(observationOf(call).settle).toMatchObject({ outcome: 'dom_quiet', pending_at_entry: 1, overflow: false });
      expect(observationOf(call).snapshot).toContain('Loaded 42');
      const stored = await storedCalls(stack, [call.id]);
      expect(stored.get(call.id)?.phases.settle).toEqual(observationOf(call).settle);
    });
  });
});

describe('tool versions', () => {
  it('a call pinned to 1.1.0 is accepted and answered in the 1.1.0 shape; its phases still record the settle report', async ({ site, agent, owner }) => {
    await inRun({ site, agent, owner }, 'pinned to 1.1.0', async (run) => {
      const navigated = await agent.raw('POST', `/v1/runs/${run}/tool-calls`, {
        tool: 'browser.navigate',
        version: '1.1.0',
        arguments: { url: site.url('settle/delayed-spa.html') },
      });
      expect(navigated.status).toBe(200);
      const call = navigated.body as { id: string; version: string; state: string; result: unknown; phases: { settle?: unknown } };
      expect(call).toMatchObject({ version: '1.1.0', state: 'succeeded' });
      const result = ToolResultV1_1.parse(call.result);
      expect(Object.keys(result).sort()).toEqual(['revision', 'snapshot', 'title', 'url', 'window']);
      expect(result).toMatchObject({ url: site.url('settle/delayed-spa.html'), title: 'Delayed SPA' });
      expect(call.phases.settle).toMatchObject({ outcome: 'dom_quiet', pending_at_entry: 2 });

      const observed = await agent.raw('POST', `/v1/runs/${run}/tool-calls`, { tool: 'browser.observe', version: '1.1.0', arguments: {} });
      expect(observed.status).toBe(200);
      expect(Object.keys(ToolResultV1_1.parse((observed.body as { result: unknown }).result)).sort()).toEqual([
        'revision',
        'snapshot',
        'title',
        'url',
        'window',
      ]);
      // The same call at 1.2.0 carries the settle report.
      const current = observationOf((await agent.propose(run, 'browser.observe', {})).body);
      expect(current.settle.outcome).toBe('not_waited');
    });
  });
});

describe('continuation cursors', () => {
  it('a forged cursor ends invalid_arguments and an older revision’s ends stale_revision, both failed and nothing read', async ({ site, agent, owner }) => {
    await inRun({ site, agent, owner }, 'continuations', async (run) => {
      const first = observationOf((await agent.propose(run, 'browser.navigate', { url: site.url('long.html?n=450') })).body);
      expect(first.window.truncated).toBe(true);
      const cursor = first.window.continuation!;

      const [payload] = cursor.split('.');
      const forged = (await agent.propose(run, 'browser.observe', { continuation: `${payload}.AAAAAAAAAAAAAAAAAAAAAA` })).body;
      expect(forged).toMatchObject({ state: 'failed', result: null, error: { code: 'invalid_arguments', message: expect.stringContaining('continuation') } });

      const next = observationOf((await agent.propose(run, 'browser.observe', { continuation: cursor })).body);
      expect(next).toMatchObject({ revision: first.revision, window: { scope: { start_node: first.window.scope.end_node } } });

      await agent.propose(run, 'browser.observe', {});
      const stale = (await agent.propose(run, 'browser.observe', { continuation: cursor })).body;
      expect(stale).toMatchObject({ state: 'failed', result: null, error: { code: 'stale_revision' } });

      const both = await agent.raw('POST', `/v1/runs/${run}/tool-calls`, {
        tool: 'browser.observe',
        version: '1.2.0',
        arguments: { continuation: cursor, wait_for: { success: { kind: 'text', text: 'Item number 1' } } },
      });
      expect(both).toMatchObject({ status: 400, body: { error: { code: 'invalid_arguments' } } });
    });
  });
});

describe('lost evidence after an act', () => {
  it('ends uncertain and not retryable with its one effect, is never resent, other acts fail page_changed, and the replaced page is navigated to again', async ({
    stack,
    site,
    agent,
    owner,
  }) => {
    await inRun({ site, agent, owner }, 'hang after click', async (run) => {
      // 150 ms after the click the page blocks its main thread for 15 s, longer than the tool
      // deadline: the host can neither settle nor capture it.
      const page = observationOf((await agent.propose(run, 'browser.navigate', { url: site.url('hangs-on-click.html?after_ms=150&hang_ms=15000') })).body);
      const click = { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Archive everything') };
      const before = site.hits('archive');

      const proposal = await agent.propose(run, 'browser.act', click);
      const call = (await owner.decide(proposal.body.approval_id!, 'approve')).tool_call;
      expect(call).toMatchObject({ state: 'uncertain', retryable: false, result: null, error: { code: 'outcome_unknown' } });
      expect(site.hits('archive')).toBe(before + 1);
      const [effects] = await stack.queryD1(`SELECT state FROM effects WHERE tool_call_id = '${call.id}'`);
      expect(effects).toEqual([{ state: 'uncertain' }]);

      // The same act is never sent again...
      const resent = await agent.raw('POST', `/v1/runs/${run}/tool-calls`, { tool: 'browser.act', version: '1.2.0', arguments: click });
      expect(resent).toMatchObject({ status: 409, body: { error: { code: 'outcome_unknown' } } });
      // ...and any other act on the old references fails page_changed: the revision did not
      // advance, but its references are void until a fresh observe.
      const scroll = (await agent.propose(run, 'browser.act', { action: 'scroll', revision: page.revision, reference: click.reference, delta: 100 })).body;
      expect(scroll).toMatchObject({ state: 'failed', result: null, error: { code: 'page_changed' } });
      expect(site.hits('archive')).toBe(before + 1);

      // The host replaced the hung page: the fresh read says so and names the page to go back to.
      const fresh = (await agent.propose(run, 'browser.observe', {})).body;
      expect(fresh).toMatchObject({ state: 'failed', retryable: true, error: { code: 'page_changed' } });
      expect(fresh.error?.message).toContain('hangs-on-click.html');
      const back = observationOf((await agent.propose(run, 'browser.navigate', { url: site.url('hangs-on-click.html') })).body);
      expect(back.revision).toBeGreaterThan(page.revision);
    });
  });
});
