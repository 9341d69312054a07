import { describe, expect, test } from 'vitest';
import { RunView, ScheduleView } from '../../shared/api.ts';
import { clientsOf, startStack } from '../support/stack-fixture.ts';
import { until } from '../support/until.ts';

// On Workers the cron trigger calls fireDueSchedules; on Node (croner) and Deno (Deno.cron) the
// entries' own schedulers call the same function every minute. Nothing here triggers it by hand:
// the test waits for the next minute boundary, on both runtimes at once.

const MINUTE_MS = 60_000;

/** A stack on Node and one on Deno, running at once (started together, stopped after the file). */
const it = test.extend('stacks', { scope: 'file' }, async ({}, { onCleanup }) => {
  const stacks = await Promise.all((['node', 'deno'] as const).map((runtime) => startStack({ runtime, headless: true })));
  onCleanup(async () => {
    await Promise.all(stacks.map((stack) => stack.stop()));
  });
  return stacks;
});

describe('the cron pass on Node and Deno', () => {
  it("GET /__scheduled runs the pass for the operator only: without a token, or with an agent's, nothing runs", async ({ stacks }) => {
    for (const stack of stacks) {
      const url = `${stack.edgeUrl}/__scheduled`;
      const anonymous = await fetch(url);
      expect([stack.runtime, anonymous.status, ((await anonymous.json()) as { error: { code: string } }).error.code]).toEqual([
        stack.runtime,
        401,
        'unauthenticated',
      ]);
      const agent = await fetch(url, { headers: { Authorization: `Bearer ${stack.tokens.agent}` } });
      expect([stack.runtime, agent.status]).toEqual([stack.runtime, 403]);
      await stack.triggerCron();
    }
  });

  it("a schedule due every minute queues its run at the next minute, fired by the runtime's own scheduler", async ({ stacks }) => {
    const createdAt = Date.now();
    const schedules = await Promise.all(
      stacks.map(async (stack) => {
        const { owner } = clientsOf(stack);
        const created = await owner.request('POST', '/v1/schedules', ScheduleView, {
          cron: '* * * * *',
          intent: `check the ${stack.runtime} scheduler`,
          profile_id: 'cron-check',
          origins: [stack.siteOrigin],
          tool_versions: { 'browser.navigate': '1.2.0', 'browser.observe': '1.2.0', 'browser.act': '1.2.0' },
        });
        return created.body;
      }),
    );

    const claimed = await Promise.all(
      stacks.map(async (stack) => {
        const { agent } = clientsOf(stack);
        return until(
          async () => {
            const answer = await agent.raw('POST', '/v1/runs/claim');
            return answer.status === 200 ? RunView.parse(answer.body) : undefined;
          },
          `the ${stack.runtime} edge to queue a run within a minute`,
          createdAt + MINUTE_MS + 15_000 - Date.now(),
          1_000,
        );
      }),
    );

    const nextMinute = Math.floor(createdAt / MINUTE_MS) + 1;
    for (const [index, stack] of stacks.entries()) {
      const schedule = schedules[index]!;
      expect(claimed[index]).toMatchObject({ state: 'running', intent: `check the ${stack.runtime} scheduler`, profile_id: 'cron-check' });
      // fireDueSchedules names the run after its schedule and the minute it fired for.
      const minute = Number(claimed[index]!.id.slice(`run_${schedule.id.slice('sch_'.length)}_`.length));
      expect(claimed[index]!.id.startsWith(`run_${schedule.id.slice('sch_'.length)}_`)).toBe(true);
      expect([nextMinute, nextMinute + 1]).toContain(minute);
    }
  }, 120_000);
});
