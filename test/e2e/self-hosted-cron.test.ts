import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../scripts/api-client.ts';
import { type LocalStack, startLocalStack } from '../../scripts/local-stack.ts';
import { RunView, ScheduleView } from '../../shared/api.ts';

// On Workers the cron trigger calls fireDueSchedules; on Node (croner) and Deno (Deno.cron) the
// entries' own schedulers call the same function every minute. Nothing here triggers it by hand:
// the test waits for the next minute boundary, on both runtimes at once.

const MINUTE_MS = 60_000;
let stacks: LocalStack[] = [];

beforeAll(async () => {
  stacks = await Promise.all((['node', 'deno'] as const).map((runtime) => startLocalStack({ runtime, database: 'fresh', headless: true })));
});

afterAll(async () => {
  await Promise.all(stacks.map((stack) => stack.stop()));
});

describe('the cron pass on Node and Deno', () => {
  it("GET /__scheduled runs the pass for the operator only: without a token, or with an agent's, nothing runs", async () => {
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

  it("a schedule due every minute queues its run at the next minute, fired by the runtime's own scheduler", async () => {
    const createdAt = Date.now();
    const schedules = await Promise.all(
      stacks.map(async (stack) => {
        const owner = new ApiClient(stack.edgeUrl, stack.tokens.owner);
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
        const agent = new ApiClient(stack.edgeUrl, stack.tokens.agent);
        const until = createdAt + MINUTE_MS + 15_000;
        while (Date.now() < until) {
          const answer = await agent.raw('POST', '/v1/runs/claim');
          if (answer.status === 200) return RunView.parse(answer.body);
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
        throw new Error(`the ${stack.runtime} edge queued no run within a minute`);
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
