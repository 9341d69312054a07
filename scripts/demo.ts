/**
 * `npm run demo`: after scripts/setup.mjs, starts the browser host (headed under Xvfb) and
 * `wrangler dev` on loopback, runs the scripted demo agent against the real TodoMVC app over
 * HTTP, prints a transcript and the run's rows read back from D1; then a short part of that
 * journey over MCP with the official client SDK (scripts/mcp-journey.ts); then a sign-in episode against
 * the account fixture site (the run parks, the scripted owner signs in through the console's live
 * view of the headed window, the run resumes by itself) with its timeline; then a reviewed recipe
 * on the same site (scripts/recipe-journey.ts: the operator installs it, the owner asks in its
 * words, the edge's recipe runner files the report) with its steps and the site's counter; shuts everything down, and exits 0 (1 when any step
 * failed). The host runs with the shipped, empty site catalog: the sign-in is verified by the
 * differential check for unknown sites.
 */
import { type AccountSite, startAccountSite } from './account-site.ts';
import { ApiClient } from './api-client.ts';
import { LOCAL_OWNER_ID, type LocalStack, startLocalStack } from './local-stack.ts';
import { runMcpJourney } from './mcp-journey.ts';
import { runRecipeJourney } from './recipe-journey.ts';
import { runSignInJourney } from './sign-in-journey.ts';
import { isStoppingOnSignal } from './stop-on-signal.ts';
import { runTodoJourney } from './todo-journey.ts';
import { describeStep, table } from './transcript.ts';

/** SQLite expression rendering an epoch-ms column as ISO-8601. */
const isoOf = (column: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${column} / 1000.0, 'unixepoch')`;

let stack: LocalStack | undefined;
let accounts: AccountSite | undefined;
let exitCode = 0;
try {
  console.log('Starting the browser host (headed Chromium under Xvfb) and the edge (wrangler dev, local D1)...');
  accounts = await startAccountSite();
  stack = await startLocalStack({
    database: 'default',
    headless: process.env.HOST_HEADLESS === '1',
  });
  console.log(`  edge ${stack.edgeUrl} · host ${stack.hostUrl} · TodoMVC ${stack.todoUrl}`);
  const edgeUrl = stack.edgeUrl;
  const consoleUrl = await new ApiClient(edgeUrl, stack.tokens.operator)
    .consoleLink(LOCAL_OWNER_ID)
    .then((link) => link.url)
    .catch(() => `${edgeUrl}/console/sign-in`);
  console.log(`  owner console: ${consoleUrl}`);
  console.log("  (approvals can be given there; this demo's scripted owner answers through the API so it runs unattended)\n");

  let index = 0;
  const record = await runTodoJourney(
    stack,
    (step) => console.log(`${describeStep(++index, step).join('\n')}\n`),
    undefined,
    (label, approvalId) =>
      console.log(
        `  ... "${label}" waits for the owner (approval ${approvalId}): it can be approved in the owner console's inbox; the scripted owner answers through the API`,
      ),
  );
  console.log(`Run ${record.run.id} reported: ${record.finalRun.state} · "${record.finalRun.summary}"\n`);

  const id = record.run.id;
  const [runRows, callRows, approvalRows, effectRows] = await stack.queryD1(
    `SELECT id, state, profile_id, latest_revision, lease_generation, report_summary AS summary FROM runs WHERE id = '${id}'`,
    `SELECT id, tool, state, decision_effect AS decision, decision_rule AS rule, json_extract(phases, '$.settle.outcome') AS settle, json_extract(phases, '$.settle.elapsed_ms') AS settle_ms, error_code FROM tool_calls WHERE run_id = '${id}' ORDER BY created_at`,
    `SELECT id, tool_call_id, state, decided_by, substr(arguments_hash, 1, 12) AS arguments_hash, substr(policy_hash, 1, 12) AS policy_hash FROM approvals WHERE run_id = '${id}' ORDER BY created_at`,
    `SELECT id, tool_call_id, state, ${isoOf('committed_at')} AS committed_at, ${isoOf('finished_at')} AS finished_at FROM effects WHERE run_id = '${id}' ORDER BY committed_at`,
  );
  console.log('Rows read back from D1 for this run:');
  for (const [name, rows] of [
    ['runs', runRows],
    ['tool_calls', callRows],
    ['approvals', approvalRows],
    ['effects', effectRows],
  ] as const) {
    console.log(`\n  ${name}`);
    console.log(table(rows ?? []));
  }

  console.log(`\nThe same pipeline over MCP (${edgeUrl}/mcp), with the official TypeScript client SDK:`);
  const mcp = await runMcpJourney(stack, (line) => console.log(`  - ${line}`));
  if (mcp.finalState !== 'completed') throw new Error(`the MCP run ended ${mcp.finalState}`);

  console.log(`\nA sign-in episode on the account site ${accounts.origin}:`);
  const [owners] = await stack.queryD1("SELECT owner_id FROM principals WHERE kind = 'owner' ORDER BY created_at LIMIT 1");
  const ownerRow = owners?.[0];
  const episode = await runSignInJourney(stack, accounts, String(ownerRow?.owner_id), (line) => console.log(`  - ${line}`));
  console.log(`\nTimeline of run ${episode.run.id} (ms after it was created):`);
  for (const entry of episode.timeline) console.log(`  +${String(entry.atMs).padStart(6)} ms  ${entry.what}`);
  console.log(
    `\n  reports filed (the site's own counter): ${episode.reportsFiled} · owner notices: ${episode.notices} · approvals asked: ${episode.approvals} · run ${episode.finalRun.state}`,
  );
  if (episode.reportsFiled !== 1 || episode.notices !== 1 || episode.approvals !== 0 || episode.finalRun.state !== 'completed') {
    throw new Error('the sign-in episode did not end with exactly one report, one notice, no approvals and a completed run');
  }

  console.log(`\nA reviewed recipe on the account site ${accounts.origin} (the profile is signed in now):`);
  const routine = await runRecipeJourney(stack, accounts, 'reports', (line) => console.log(`  - ${line}`));
  for (const step of routine.timeline.steps) {
    console.log(`  step ${step.index + 1}, ${step.title}: ${step.state} (calls ${step.tool_call_ids.join(', ') || 'none'})`);
    for (const event of step.events) console.log(`      ${event.kind.replaceAll('_', ' ')}: ${event.summary}`);
  }
  console.log(
    `\n  run ${routine.finalRun.state} · calls ${routine.timeline.calls} of 64 · step executions ${routine.timeline.steps_begun} of 16 · agent calls ${routine.agentCalls} · approvals asked ${routine.approvals} · reports filed (the site's own counter): ${routine.reportsFiled}`,
  );
  console.log(`  report: ${routine.finalRun.summary?.replaceAll('\n', ' ') ?? ''}`);
  if (routine.finalRun.state !== 'completed' || routine.reportsFiled !== 1 || routine.agentCalls !== 0) {
    throw new Error('the recipe run did not end completed with exactly one report and no agent calls');
  }

  console.log(
    "\nDemo finished: on TodoMVC the bounded scroll ran without asking and every other act waited for the owner and was dispatched exactly once, over HTTP and over MCP alike; on the account site the owner's grant covered the acts, the sign-in episode was resolved by one native sign-in through the console's live view and resumed by itself, and the reviewed recipe filed the weekly report by itself, one ordinary call at a time.",
  );
} catch (error) {
  exitCode = 1;
  // Ctrl-C: the stack is being stopped under the demo's calls (scripts/stop-on-signal.ts).
  if (isStoppingOnSignal()) console.error('\nDemo stopped before it finished.');
  else console.error(`\nDemo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
} finally {
  console.log('Shutting down the host and the edge...');
  await stack?.stop();
  await accounts?.close();
}
process.exit(exitCode);
