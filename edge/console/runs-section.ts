import { desc, eq } from 'drizzle-orm';
import { Hono } from 'hono';
import { html } from 'hono/html';
import type { CallPhases } from '../../shared/api.ts';
import { screenshotsOfRun } from '../artifacts/screenshots.ts';
import { type PlacementRow, type RunRow, runs } from '../db/schema.ts';
import { placementOfRun } from '../fleet/placement.ts';
import { callSummary } from '../pipeline/views.ts';
import type { Ports } from '../ports.ts';
import { type RunRecord, runRecordOf } from '../runs/record.ts';
import { signInRouteInWords } from '../sign-in/owner-views.ts';
import { runMemoriesFragment } from './anticipation-fragment.ts';
import { layout, runPage, runsPage, type TimelineEntry } from './pages.ts';
import { pictureOf } from './pictures.ts';
import { runFilesFragment } from './run-files-section.ts';
import type { ConsoleEnv } from './session-guard.ts';

/** Most runs the runs page lists. */
export const RUNS_LISTED = 100;

/** The owner's view of a run's record ({@link RunRecord}), oldest first: its calls (each with the picture of the page after it, when kept), sign-in waits, notices and recipe steps. */
async function timelineOf(ports: Ports, run: RunRow): Promise<TimelineEntry[]> {
  const [record, pictures] = await Promise.all([runRecordOf(ports, run), screenshotsOfRun(ports, run.ownerId, run.id)]);
  const { calls, signInWaits: waits, notices: runNotices, recipeEvents: recipeSteps } = record;
  const entries: TimelineEntry[] = [
    ...calls.map((call): TimelineEntry => {
      const phases = (call.phases ?? {}) as CallPhases;
      const details: Array<readonly [string, string]> = [['State', call.state.replaceAll('_', ' ')]];
      if (phases.decision) details.push(['Decision', `${phases.decision.effect} by rule ${phases.decision.rule}`]);
      if (phases.approval) details.push(['Approval', `${phases.approval.decision} at ${phases.approval.at}`]);
      if (phases.watermark) details.push(['Watermark', `effect ${phases.watermark.effect_id} committed at ${phases.watermark.committed_at}`]);
      if (phases.dispatch)
        details.push([
          'Dispatch',
          `${phases.dispatch.outcome ?? 'started'}${phases.dispatch.elapsed_ms !== undefined ? ` in ${phases.dispatch.elapsed_ms} ms` : ''}${phases.dispatch.host_id ? ` on host ${phases.dispatch.host_id}` : ''}`,
        ]);
      if (phases.settle) details.push(['Settle', `${phases.settle.outcome} after ${phases.settle.elapsed_ms} ms`]);
      if (phases.postcondition) details.push(['Postcondition', `${phases.postcondition.status} after ${phases.postcondition.observations} observation(s)`]);
      if (call.errorCode) details.push(['Error', `${call.errorCode}: ${call.errorMessage ?? ''}`]);
      const thumbnail = pictureOf(pictures.get(call.id)?.after);
      return { at: call.createdAt, what: callSummary(call), details, ...(thumbnail ? { thumbnail } : {}) };
    }),
    ...waits.map(
      (wait): TimelineEntry => ({
        at: wait.createdAt,
        what: `Waiting for sign-in on ${wait.origin}`,
        details: [['State', wait.state], ...(wait.fenceReason ? ([['Ended', wait.fenceReason]] as const) : [])],
      }),
    ),
    ...runNotices.map((notice): TimelineEntry => ({ at: notice.createdAt, what: 'Notice to you', details: [['Text', notice.text]] })),
    // Each sign-in outcome, with where the person's window went (shown to the owner only).
    ...record.ceremonyEvents.map(
      (event): TimelineEntry => ({
        at: event.receivedAt,
        what: `Sign-in on ${event.origin}: ${event.outcome.replaceAll('_', ' ')}`,
        details: [
          ['Verified by', event.method],
          ...(event.visitedOrigins?.length ? ([['Went through', signInRouteInWords(event.origin, event.visitedOrigins)]] as const) : []),
        ],
      }),
    ),
    // A recipe-bound run's steps, with their evidence and calls (issue 19).
    ...recipeSteps.map(
      (event): TimelineEntry => ({
        at: event.createdAt,
        what: `Recipe${event.step === null ? '' : ` step ${event.step + 1}`}: ${event.summary}`,
        details: [
          ['Kind', event.kind.replaceAll('_', ' ')],
          ...(event.toolCallId ? ([['Call', event.toolCallId]] as const) : []),
          ...(Object.keys(event.evidence).length > 0 ? ([['Evidence', JSON.stringify(event.evidence).slice(0, 400)]] as const) : []),
        ],
      }),
    ),
  ];
  return entries.sort((a, b) => a.at - b.at);
}

/** Where a profile is placed, in the owner's words: the host, the generation and why it is there. */
function placementInWords(placed: PlacementRow): string {
  const why =
    placed.reason === 'first_lease'
      ? 'placed there for its first lease'
      : `moved there from ${placed.previousHostId ?? 'another host'} because that host ${placed.reason === 'host_unreachable' ? 'could not be reached' : placed.reason === 'host_draining' ? 'was drained' : 'was removed'}`;
  return `the profile is served by host ${placed.hostId} (placement ${placed.generation}, ${why} at ${new Date(placed.placedAt).toISOString()})`;
}

/** The runs section: the owner's runs, newest first, and each run's timeline. */
export const runsSection = new Hono<ConsoleEnv>()
  .get('/console/runs', async (c) => {
    const rows = await c.var.ports.db
      .select({ id: runs.id, intent: runs.intent, state: runs.state, createdAt: runs.createdAt, deadlineAt: runs.deadlineAt })
      .from(runs)
      .where(eq(runs.ownerId, c.var.session.ownerId))
      .orderBy(desc(runs.createdAt))
      .limit(RUNS_LISTED);
    return c.html(runsPage(rows, c.var.session.csrfToken, c.var.ports.clock.now()));
  })
  .get('/console/runs/:id', async (c) => {
    const run = await c.var.ports.db
      .select()
      .from(runs)
      .where(eq(runs.id, c.req.param('id')))
      .get();
    if (!run || run.ownerId !== c.var.session.ownerId)
      return c.html(layout('Not found', html`<p>No such run.</p>`, { csrfToken: c.var.session.csrfToken }), 404);
    const recipe = run.recipeId === null ? null : `${run.recipeId} version ${run.recipeVersion} (hash ${run.recipeHash?.slice(0, 12)})`;
    const placed = await placementOfRun(c.var.ports, run);
    const placement = placed ? placementInWords(placed) : null;
    const [timeline, files, memories] = await Promise.all([
      timelineOf(c.var.ports, run),
      runFilesFragment(c.var.ports, run, c.var.session.csrfToken),
      runMemoriesFragment(c.var.ports, run.id),
    ]);
    return c.html(runPage({ ...run, report: run.reportSummary, recipe, placement }, timeline, c.var.session.csrfToken, html`${memories}${files}`));
  });
