/**
 * `npm run demo`: after scripts/setup.mjs, starts the browser host (headed under Xvfb) and
 * `wrangler dev` on loopback, runs the scripted demo agent against the real TodoMVC app over
 * HTTP, prints a transcript and the run's rows read back from D1; then a short part of that
 * journey over MCP with the official client SDK (scripts/mcp-journey.ts); then a sign-in episode against
 * the account fixture site (the run parks, the scripted owner signs in through the console's live
 * view of the headed window, the run resumes by itself) with its timeline; shuts everything down, and exits 0 (1 when any step
 * failed). The host runs with the shipped, empty site catalog: the sign-in is verified by the
 * differential check for unknown sites.
 */
import { type AccountSite, startAccountSite } from './account-site.ts';
import { ApiClient } from './api-client.ts';
import { LOCAL_OWNER_ID, type LocalStack, startLocalStack } from './local-stack.ts';
import { runMcpJourney } from './mcp-journey.ts';
import { runSignInJourney } from './sign-in-journey.ts';
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

  console.log(
    "\nDemo finished: on TodoMVC the bounded scroll ran without asking and every other act waited for the owner and was dispatched exactly once, over HTTP and over MCP alike; on the account site the owner's grant covered the acts, and the sign-in episode was resolved by one native sign-in through the console's live view and resumed by itself.",
  );
} catch (error) {
  exitCode = 1;
  console.error(`\nDemo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
} finally {
  console.log('Shutting down the host and the edge...');
  await stack?.stop();
  await accounts?.close();
}
process.exit(exitCode);
