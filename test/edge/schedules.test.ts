import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { RunView, ScheduleView } from '../../shared/api.ts';
import { call, callError, type ErrorBody, partiesForEachTest, setLatestPage } from './support/edge-client.ts';
import { fireSchedules, PAGE, runFixture, SCHEDULE, SEVEN_AM } from './support/run-fixture.ts';

// Schedules fire runs from the Worker's cron handler; agents claim them.

const parties = partiesForEachTest();
const { act } = runFixture(parties);

describe('schedules and claims', () => {
  it('a schedule fires once per due minute; the run is queued with pinned versions and claimed once', async () => {
    const created = await call<ScheduleView>('POST', '/v1/schedules', {
      token: parties.owner.token,
      body: { ...SCHEDULE, tool_versions: { ...SCHEDULE.tool_versions, 'browser.act': '1.1.0' } },
    });
    await fireSchedules(SEVEN_AM + 10_000);
    await fireSchedules(SEVEN_AM + 20_000);
    await fireSchedules(SEVEN_AM + 60_000);
    const runs = await env.DB.prepare('SELECT id, state, kind, pinned_versions FROM runs WHERE schedule_id = ?').bind(created.body.id).all();
    expect(runs.results).toHaveLength(1);
    expect(runs.results[0]).toMatchObject({ state: 'queued', kind: 'scheduled' });
    const first = await call<RunView>('POST', '/v1/runs/claim', { token: parties.agent.token });
    expect(first.body.id).toBe(runs.results[0]!.id);
    const second = await callError('POST', '/v1/runs/claim', { token: parties.secondAgent.token });
    expect([second.status, second.body.error.code]).toEqual([404, 'not_found']);
    await setLatestPage(first.body.id, 3, PAGE);
    const wrongVersion = await act<ErrorBody>(first.body.id, { action: 'scroll', delta: 10 });
    expect([wrongVersion.status, wrongVersion.body.error.code]).toEqual([400, 'invalid_arguments']);
  });

  it.each([
    ['a cron that does not parse', { cron: 'every morning' }],
    ['a six-field cron', { cron: '0 0 7 * * *' }],
    ['an unknown field', { enabled: false }],
    ['a missing pinned version', { tool_versions: { 'browser.act': '1.2.0' } }],
  ])('a schedule with %s is refused', async (_name, change) => {
    const answer = await callError('POST', '/v1/schedules', { token: parties.owner.token, body: { ...SCHEDULE, ...change } });
    expect([answer.status, answer.body.error.code]).toEqual([400, 'invalid_request']);
  });
});
