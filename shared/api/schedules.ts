import { z } from 'zod';
import { Origin } from '../origin.ts';
import { ToolVersion } from '../tools.ts';
import { MAX_RUN_DEADLINE_MS, RunProfileId } from './runs.ts';

// Owner schedules.
// Part of the agent-facing HTTP API v1: shared/api.ts re-exports every resource's file.

/** `POST /v1/schedules`: a cron-fired run with trusted-configuration authority. */
export const CreateScheduleBody = z
  .strictObject({
    /** Five-field cron expression, UTC, e.g. `0 7 * * *`. */
    cron: z.string().min(9).max(100),
    intent: z.string().min(1).max(2000),
    profile_id: RunProfileId,
    origins: z.array(Origin).min(1).max(16),
    /** Tool versions every call of the run must use. */
    tool_versions: z.strictObject({ 'browser.navigate': ToolVersion, 'browser.observe': ToolVersion, 'browser.act': ToolVersion }),
    policy_profile: z
      .string()
      .regex(/^[a-z0-9_-]{1,64}$/)
      .optional(),
    /** Run deadline in ms; default five minutes. */
    deadline_ms: z.int().min(1_000).max(MAX_RUN_DEADLINE_MS).optional(),
  })
  .meta({
    examples: [
      {
        cron: '0 7 * * *',
        intent: 'Read my briefing page and summarise it',
        profile_id: 'me',
        origins: ['http://127.0.0.1:8080'],
        tool_versions: { 'browser.navigate': '1.2.0', 'browser.observe': '1.2.0', 'browser.act': '1.2.0' },
        policy_profile: 'default',
        deadline_ms: 300_000,
      },
    ],
  });

export type CreateScheduleBody = z.infer<typeof CreateScheduleBody>;

export const ScheduleView = z.strictObject({
  id: z.string(),
  cron: z.string(),
  intent: z.string(),
  profile_id: z.string(),
  origins: z.array(z.string()),
  tool_versions: z.record(z.string(), z.string()),
  policy_profile: z.string(),
  deadline_ms: z.int(),
  enabled: z.boolean(),
  created_at: z.string(),
});

export type ScheduleView = z.infer<typeof ScheduleView>;
