import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { Ports } from '../../edge/ports.ts';
import { fireDueSchedules } from '../../edge/schedules/schedules.ts';
import type { RunView, ScheduleView } from '../../shared/api.ts';
import { call, callError, type ErrorBody, partiesForEachTest, setLatestPage, workerdPorts } from './support/edge-client.ts';
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

const MINUTE_MS = 60_000;

/** Ports whose database refuses every batch while `locked` (as SQLite's "database is locked" would). */
function portsWithLockableDatabase(): { ports: Ports; lock: (on: boolean) => void } {
  const base = workerdPorts();
  let locked = false;
  const db = new Proxy(base.db, {
    get(target, property, receiver) {
      if (property === 'batch' && locked) return () => Promise.reject(new Error('database is locked'));
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { ports: { ...base, db }, lock: (on) => (locked = on) };
}

/** A daily schedule due at `minute` (epoch ms on a minute boundary, UTC). */
async function scheduleAt(minute: number): Promise<string> {
  const at = new Date(minute);
  const created = await call<ScheduleView>('POST', '/v1/schedules', {
    token: parties.owner.token,
    body: { ...SCHEDULE, cron: `${at.getUTCMinutes()} ${at.getUTCHours()} * * *` },
  });
  expect(created.status).toBe(201);
  return created.body.id;
}

const runsOf = async (scheduleId: string) =>
  (await env.DB.prepare('SELECT id FROM runs WHERE schedule_id = ?').bind(scheduleId).all<{ id: string }>()).results.map((row) => row.id);

describe('a schedule whose pass failed', () => {
  it('fires for the missed minute at the next pass, once, when its minute found the database locked', async () => {
    const due = (Math.floor(Date.now() / MINUTE_MS) + 1) * MINUTE_MS;
    const scheduleId = await scheduleAt(due);
    const { ports, lock } = portsWithLockableDatabase();
    lock(true);
    expect(await fireDueSchedules(ports, due + 5_000)).toEqual([]);
    lock(false);
    const fired = await fireDueSchedules(ports, due + MINUTE_MS);
    // Only this schedule's runs: others may be due then too (around 07:00 UTC, the daily 07:00 schedule above).
    expect(fired.filter((run) => run.scheduleId === scheduleId).map((run) => run.id)).toEqual([`run_${scheduleId.slice('sch_'.length)}_${due / MINUTE_MS}`]);
    await fireDueSchedules(ports, due + 2 * MINUTE_MS);
    expect(await runsOf(scheduleId)).toHaveLength(1);
  });

  it('fires each of several schedules that missed the same minute once, at the next pass', async () => {
    const due = (Math.floor(Date.now() / MINUTE_MS) + 1) * MINUTE_MS;
    const scheduleIds = [await scheduleAt(due), await scheduleAt(due)];
    const { ports, lock } = portsWithLockableDatabase();
    lock(true);
    expect(await fireDueSchedules(ports, due + 5_000)).toEqual([]);
    lock(false);
    const fired = await fireDueSchedules(ports, due + MINUTE_MS);
    const ours = fired.filter((run) => scheduleIds.includes(run.scheduleId ?? ''));
    expect(ours.map((run) => run.id).sort()).toEqual(scheduleIds.map((id) => `run_${id.slice('sch_'.length)}_${due / MINUTE_MS}`).sort());
    await fireDueSchedules(ports, due + 2 * MINUTE_MS);
    for (const id of scheduleIds) expect(await runsOf(id)).toHaveLength(1);
  });

  it('is not fired later than 15 minutes after its minute, nor for a minute before it was created', async () => {
    const due = (Math.floor(Date.now() / MINUTE_MS) + 1) * MINUTE_MS;
    const late = await scheduleAt(due);
    expect(await fireDueSchedules(workerdPorts(), due + 16 * MINUTE_MS)).not.toContainEqual(expect.objectContaining({ scheduleId: late }));
    const before = await scheduleAt(Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS - 2 * MINUTE_MS);
    await fireDueSchedules(workerdPorts(), Date.now());
    expect(await runsOf(late)).toEqual([]);
    expect(await runsOf(before)).toEqual([]);
  });
});
