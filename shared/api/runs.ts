import { z } from 'zod';
import { SignInReason } from '../authentication.ts';
import { AnticipatedMemory, MAX_REPORT_MEMORIES, ProposedMemory, RunAnticipationView } from '../memories.ts';
import { Origin } from '../origin.ts';
import { MessageFields, RecipeBinding } from '../recipes.ts';
import { PlacementView } from './hosts.ts';

// Runs: creating one, its states and view, its messages, report and activity.
// Part of the agent-facing HTTP API v1: shared/api.ts re-exports every resource's file.

/** Longest run deadline, in ms (one hour). */
export const MAX_RUN_DEADLINE_MS = 3_600_000;

/** Default run deadline, in ms (five minutes). */
export const DEFAULT_RUN_DEADLINE_MS = 300_000;

/**
 * A run's browser profile, named by its owner (at most 48 characters). The host keeps it apart
 * from every other owner's profile of the same name (see edge/profiles/bindings.ts).
 */
export const RunProfileId = z.string().regex(/^[A-Za-z0-9_-]{1,48}$/, 'letters, digits, _ and -, at most 48');

export const CreateRunBody = z
  .strictObject({
    profile_id: RunProfileId,
    intent: z.string().min(1).max(2000),
    origins: z.array(Origin).min(1).max(16),
    deadline_ms: z.int().min(1_000).max(MAX_RUN_DEADLINE_MS).optional(),
    /**
     * Named values of the owner's message (shared/recipes.ts `MessageFields`) that a reviewed
     * recipe may type, e.g. `{"title": "Week 49"}`. Only an owner's message carries them.
     */
    fields: MessageFields.optional(),
  })
  .meta({
    examples: [{ profile_id: 'me', intent: 'Add "Buy oat milk" to my todo list', origins: ['http://127.0.0.1:8080'], deadline_ms: 300_000 }],
  });

export type CreateRunBody = z.infer<typeof CreateRunBody>;

export const RunState = z.enum([
  'queued',
  'running',
  'waiting_for_approval',
  'waiting_for_authentication',
  'completed',
  'partial',
  'uncertain',
  'cancelled',
  'failed',
  'deadline_exceeded',
]);

export type RunState = z.infer<typeof RunState>;

/** Run states after which nothing more happens on the run. */
export const TERMINAL_RUN_STATES: readonly RunState[] = ['completed', 'partial', 'uncertain', 'cancelled', 'failed', 'deadline_exceeded'];

/** Run states in which a run may still change: every state but the terminal ones. */
export const ACTIVE_RUN_STATES = ['queued', 'running', 'waiting_for_approval', 'waiting_for_authentication'] as const satisfies readonly RunState[];

export const RunView = z.strictObject({
  id: z.string(),
  state: RunState,
  profile_id: z.string(),
  intent: z.string(),
  origins: z.array(z.string()),
  /** ISO-8601 instants. */
  deadline_at: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  latest_revision: z.int().nullable(),
  summary: z.string().nullable(),
  /** While `waiting_for_authentication`: the wait, its episode and what the owner is asked. */
  authentication: z
    .strictObject({
      wait_id: z.string(),
      episode_id: z.string(),
      origin: z.string(),
      question: z.string(),
      generation: z.int().min(1),
      /** Why the page was taken for a sign-in wall (issue 17): the evidence the host saw. */
      reasons: z.array(SignInReason),
    })
    .nullable(),
  /** The reviewed recipe the run is bound to (its id, version and hash), or null for the ordinary agent path. */
  recipe: RecipeBinding.nullable(),
  /**
   * Where the run's profile is placed in the fleet of browser hosts (issue 32), on the run's own
   * view (`GET /v1/runs/{id}`, MCP `run_status`) and in `GET /v1/runs`; null when it was never
   * placed (and on the answers of create, report and cancel).
   */
  placement: PlacementView.nullable(),
  /**
   * The owner's own statements the run's anticipation brought (issue 34, ADR-0168): verified
   * predictions only, each a memory's id and its statement as the owner wrote it, in the
   * provider's order; empty when anticipation was off or brought nothing. Refused predictions are
   * the owner's record (`GET /v1/runs/{id}/anticipation`), never shown here.
   */
  anticipated: z.array(AnticipatedMemory),
  /** How the run's anticipation was decided at its start (`ran`, or `off` with the reason); null on runs made before memories existed. */
  anticipation: RunAnticipationView.nullable(),
});

export type RunView = z.infer<typeof RunView>;

/** Most runs one page of `GET /v1/runs` holds; the default is {@link DEFAULT_RUN_PAGE}. */
export const MAX_RUN_PAGE = 100;
export const DEFAULT_RUN_PAGE = 20;

/** `GET /v1/runs`: filters, page size and the cursor of the page to read. */
export const RunListQuery = z.strictObject({
  state: RunState.optional().meta({ description: 'only runs in this state', examples: ['running'] }),
  profile_id: RunProfileId.optional().meta({ description: 'only runs on this profile (as its owner names it)', examples: ['me'] }),
  limit: z
    .string()
    .regex(/^[0-9]{1,3}$/, `an integer from 1 to ${MAX_RUN_PAGE}`)
    .transform(Number)
    .pipe(z.int().min(1, `an integer from 1 to ${MAX_RUN_PAGE}`).max(MAX_RUN_PAGE, `an integer from 1 to ${MAX_RUN_PAGE}`))
    .optional()
    .meta({ description: `runs per page, 1-${MAX_RUN_PAGE} (default ${DEFAULT_RUN_PAGE})`, examples: ['20'] }),
  cursor: z
    .string()
    .max(200)
    .optional()
    .meta({ description: "the previous page's `next_cursor`, as it was given (opaque); a cursor the edge did not make is `invalid_cursor`" }),
});
export type RunListQuery = z.infer<typeof RunListQuery>;

/**
 * One page of runs, newest first (by creation time, then id, so pages neither repeat nor skip a
 * run created meanwhile); `next_cursor` reads the next page, null on the last one.
 */
export const RunList = z.strictObject({ runs: z.array(RunView), next_cursor: z.string().nullable() });
export type RunList = z.infer<typeof RunList>;

export const MessageBody = z.strictObject({ text: z.string().min(1).max(10_000) }).meta({ examples: [{ text: 'Also tick it done once it is listed.' }] });

export type MessageBody = z.infer<typeof MessageBody>;

export const MessageView = z.strictObject({
  id: z.string(),
  run_id: z.string(),
  trust: z.enum(['trusted', 'untrusted']),
  text: z.string(),
  created_at: z.string(),
});

export type MessageView = z.infer<typeof MessageView>;

export const ReportBody = z
  .strictObject({
    status: z.enum(['completed', 'partial', 'uncertain', 'failed']),
    summary: z.string().min(1).max(20_000),
    /**
     * Memories the agent proposes for the owner (issue 34): each becomes a suggestion the owner
     * accepts or rejects in the console, never an active memory by itself. `page_derived: true`
     * when the agent read it on a page.
     */
    memories: z.array(ProposedMemory).max(MAX_REPORT_MEMORIES).optional(),
  })
  .meta({ examples: [{ status: 'completed', summary: 'Added "Buy oat milk" to the todo list and ticked it done.' }] });

export type ReportBody = z.infer<typeof ReportBody>;

/** One entry of a run's passive activity record, oldest first. */
export const ActivityEntry = z.strictObject({
  at: z.string(),
  kind: z.enum(['run_created', 'message', 'tool_call', 'approval', 'effect', 'sign_in_wait', 'ceremony_event', 'run_ended', 'memory_suggestion']),
  id: z.string(),
  summary: z.string(),
});

export const ActivityList = z.strictObject({ run_id: z.string(), activity: z.array(ActivityEntry) });

export type ActivityList = z.infer<typeof ActivityList>;
