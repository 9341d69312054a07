import { ActivityList, GrantView, type RunView } from '../shared/api.ts';
import type { AccountSite } from './account-site.ts';
import { ApiClient, observationOf } from './api-client.ts';
import { refOf } from './aria-refs.ts';
import type { LocalStack } from './local-stack.ts';
import { signInThroughLiveView } from './person-in-live-view.ts';

/** One line of a sign-in episode's timeline: ms since the run was created, and what happened. */
export interface TimelineEntry {
  readonly atMs: number;
  readonly what: string;
}

/** What the sign-in journey did. */
export interface SignInJourneyRecord {
  readonly run: RunView;
  readonly finalRun: RunView;
  readonly timeline: TimelineEntry[];
  /** Reports the site filed, by its own counter (exactly 1 when nothing was replayed). */
  readonly reportsFiled: number;
  /** Owner notices for the run (exactly 1: one per unresolved episode). */
  readonly notices: number;
  /** Approvals asked of the owner (0: the grant covers the routine writes). */
  readonly approvals: number;
}

async function waitForState(agent: ApiClient, runId: string, state: RunView['state'], timeoutMs: number): Promise<RunView> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const run = await agent.run(runId);
    if (run.state === state) return run;
    if (Date.now() > until) throw new Error(`run ${runId} is ${run.state}, not ${state}, after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * The demo's sign-in episode (ADR-0164, DESIGN.md section 8) over HTTP, against the account site:
 * the owner asks for a report to be filed and grants the routine writes; the agent's navigation
 * meets the sign-in wall and the run parks (one notice); the owner, scripted in a browser of their
 * own, signs in through the console's live view of the host's window (issue 16); the host verifies
 * and calls back; the run resumes by itself; the agent reads afresh, files the report once and
 * reports.
 * @param log sees each step as it happens.
 * @throws Error when a step does not produce what it should.
 */
export async function runSignInJourney(stack: LocalStack, site: AccountSite, ownerId: string, log: (line: string) => void): Promise<SignInJourneyRecord> {
  const agent = new ApiClient(stack.edgeUrl, stack.tokens.agent);
  const owner = new ApiClient(stack.edgeUrl, stack.tokens.owner);
  const profile = 'reports';
  const title = 'Week 48';
  const run = await owner.createRun({ profile_id: profile, intent: `File the weekly report titled "${title}"`, origins: [site.origin], deadline_ms: 600_000 });
  await owner.request('POST', '/v1/grants', GrantView, {
    tool: 'browser.act',
    actions: ['type', 'click'],
    origin: site.origin,
    max_uses: 5,
    ttl_ms: 3_600_000,
  });
  log(`owner created run ${run.id} and granted typing and clicking on ${site.origin}`);

  const blocked = (await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports/new` })).body;
  if (blocked.error?.code !== 'authentication_required') throw new Error(`expected a sign-in wall, got ${blocked.state} ${blocked.error?.code ?? ''}`);
  const parked = await agent.run(run.id);
  log(`agent navigated to /reports/new: ${blocked.error.code}; the run is ${parked.state}`);
  const notices = await owner.waitForNotices(run.id);
  log(`owner notice: "${notices[0]?.text ?? '(none)'}"`);

  log("the owner opens the live view from the console's Sign-ins page (a browser of their own, scripted) and signs in as alice through it");
  const consoleLink = (await new ApiClient(stack.edgeUrl, stack.tokens.operator).consoleLink(ownerId)).url;
  const seen = await signInThroughLiveView({ consoleLink, username: 'alice', password: 'alice-pass', timeoutMs: 60_000 });
  log(`the live view showed the sign-in window ${seen.firstFrameMs} ms after it was opened; ${seen.ended.replace(/^The live view ended: /, 'it ended: ')}`);
  const resumed = await waitForState(agent, run.id, 'queued', 60_000);
  log(
    `the host verified the sign-in and called back; the run is ${resumed.state} again (latest revision ${resumed.latest_revision ?? 'none'}: it must read afresh)`,
  );

  let page = observationOf((await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports/new` })).body);
  const typed = (
    await agent.propose(run.id, 'browser.act', { action: 'type', revision: page.revision, reference: refOf(page.snapshot, 'textbox', 'Title'), text: title })
  ).body;
  page = observationOf(typed);
  const filed = (
    await agent.propose(run.id, 'browser.act', {
      action: 'click',
      revision: page.revision,
      reference: refOf(page.snapshot, 'button', 'File report'),
      postcondition: { success: { kind: 'text', text: title } },
    })
  ).body;
  const condition = filed.result && 'condition' in filed.result ? filed.result.condition?.status : undefined;
  log(`agent read the form afresh, typed "${title}" and filed it: ${filed.state}, postcondition ${condition ?? 'none'}`);
  const finalRun = await agent.report(run.id, condition === 'satisfied' ? 'completed' : 'uncertain', `Filed "${title}" after the owner signed in.`);

  const activity = (await owner.request('GET', `/v1/runs/${run.id}/activity`, ActivityList)).body.activity;
  const createdAt = Date.parse(run.created_at);
  const ownerNotices = await owner.noticesFor(run.id);
  const timeline = [
    ...activity
      .filter((entry) => entry.kind !== 'effect')
      .map((entry) => ({ atMs: Date.parse(entry.at) - createdAt, what: `${entry.kind}: ${entry.summary}` })),
    ...ownerNotices.flatMap((n) => [
      { atMs: Date.parse(n.created_at) - createdAt, what: `notice to the owner: ${n.text}` },
      ...(n.resolved_at ? [{ atMs: Date.parse(n.resolved_at) - createdAt, what: 'notice resolved: the sign-in was verified' }] : []),
    ]),
  ].sort((a, b) => a.atMs - b.atMs);
  const [approvalRows] = await stack.queryD1(`SELECT count(*) AS n FROM approvals WHERE run_id = '${run.id}'`);
  const approvals = approvalRows?.[0];
  return {
    run,
    finalRun,
    timeline,
    reportsFiled: site.counters().reports_filed,
    notices: notices.length,
    approvals: Number(approvals?.n ?? -1),
  };
}
