import { describe, expect } from 'vitest';
import { observationOf } from '../../scripts/api-client.ts';
import type { ToolCallView } from '../../shared/api.ts';
import { stackTest } from '../support/stack-fixture.ts';

// The host restarts mid-run (killed, started again: its browsers are new). The run's next lease
// finds an empty page: the observe says `page_changed`, retryable, and names the run's page; the
// agent navigates back to it, which is the run's own URL and asks nobody. Real host, real edge
// (wrangler dev), real D1.

const it = stackTest({ headless: true, edgeVars: { TOOL_DEADLINE_MS: '15000' } });

describe('a host restart in the middle of a run', () => {
  it("the next observe fails page_changed (retryable) naming the run's page; navigating back to it asks nobody", async ({ stack, site, agent, owner }) => {
    const run = (await owner.createRun({ profile_id: 'restart-e2e', intent: 'read the form page', origins: [site.origin] })).id;
    const page = site.url('form.html');
    const first = (await agent.propose(run, 'browser.navigate', { url: page })).body;
    expect(first.state).toBe('succeeded');

    await stack.killHost();
    await stack.startHost();

    const observed = await agent.raw('POST', `/v1/runs/${run}/tool-calls`, { tool: 'browser.observe', version: '1.2.0', arguments: {} });
    const failed = observed.body as ToolCallView;
    expect(failed).toMatchObject({ state: 'failed', error: { code: 'page_changed' }, retryable: true });
    expect(failed.error?.message).toContain(page);
    const [rows] = await stack.queryD1(`SELECT latest_url FROM runs WHERE id = '${run}'`);
    expect(rows?.[0]?.latest_url).toBe(page);

    const back = await agent.propose(run, 'browser.navigate', { url: page });
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ state: 'succeeded', approval_id: null, phases: { decision: { effect: 'allow' } } });
    expect(observationOf(back.body).url).toBe(page);
    expect((await owner.pendingApprovals()).filter((approval) => approval.run_id === run)).toEqual([]);
    await agent.report(run, 'completed', 'read it after the restart');
  });
});
