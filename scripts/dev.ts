/**
 * `npm run dev` (`dev:node`, `dev:deno`): after scripts/setup.mjs, starts the browser host
 * (headed under Xvfb when no display is set) and the edge on loopback in the foreground, with the
 * tokens from `.dev.vars`, and stops both on Ctrl-C. The edge runs under `wrangler dev` with the
 * local D1, or with `--runtime node` / `--runtime deno` on Node or Deno over `.data/edge.sqlite`.
 * `--hosts N` (`npm run dev -- --hosts 3`) starts N hosts, `host-1` ... `host-N`, on consecutive
 * ports, each with its own profiles, all given to the edge (HOST_URLS); default one.
 * Edge port: EDGE_PORT (default 8787); first host port: HOST_PORT (default 8790).
 */
import { parseArgs } from 'node:util';
import { ApiClient } from './api-client.ts';
import { EDGE_RUNTIMES, type EdgeRuntime, LOCAL_OWNER_ID, MAX_LOCAL_HOSTS, startLocalStack } from './local-stack.ts';
import { isStoppingOnSignal } from './stop-on-signal.ts';

const port = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value <= 0 || value > 65_535) throw new Error(`${name} must be a TCP port`);
  return value;
};

const { values: args } = parseArgs({ options: { runtime: { type: 'string', default: 'workers' }, hosts: { type: 'string', default: '1' } } });
const runtime = args.runtime as EdgeRuntime;
if (!EDGE_RUNTIMES.includes(runtime)) throw new Error(`--runtime must be one of ${EDGE_RUNTIMES.join(', ')}`);
const hosts = Number(args.hosts);
if (!Number.isInteger(hosts) || hosts < 1 || hosts > MAX_LOCAL_HOSTS) throw new Error(`--hosts must be a whole number from 1 to ${MAX_LOCAL_HOSTS}`);

const stack = await startLocalStack({
  runtime,
  hosts,
  edgePort: port('EDGE_PORT', 8787),
  hostPort: port('HOST_PORT', 8790),
  database: 'default',
  headless: process.env.HOST_HEADLESS === '1',
  echo: true,
});
/** A one-time sign-in link to the owner's console for the local owner (valid 15 minutes, once), or why there is none. */
async function consoleLink(): Promise<string> {
  return new ApiClient(stack.edgeUrl, stack.tokens.operator)
    .consoleLink(LOCAL_OWNER_ID)
    .then((link) => link.url)
    .catch(
      (error: unknown) =>
        `(no sign-in link: ${error instanceof Error ? error.message : String(error)}; sign in at ${stack.edgeUrl}/console/sign-in with OWNER_TOKEN)`,
    );
}

/** The host line (one host, as it always was) or one line per host with several. */
function hostLines(): string {
  if (stack.hosts.length === 1) return `Host:  ${stack.hostUrl}`;
  const width = Math.max(...stack.hosts.map((host) => host.url.length));
  return [
    `Hosts (${stack.hosts.length}, all given to the edge as HOST_URLS; profiles of each in its own directory):`,
    ...stack.hosts.map((host) => `  ${host.id}  ${host.url.padEnd(width)}  pid ${host.pid}  profiles ${host.profilesDir}`),
  ].join('\n');
}

console.log(`
Owner console: ${await consoleLink()}
  (a one-time sign-in link for the local owner: open it and press its button; valid for 15 minutes; later, sign in at ${stack.edgeUrl}/console/sign-in with OWNER_TOKEN)
Edge (${runtime}):  ${stack.edgeUrl}   (API reference: ${stack.edgeUrl}/docs, OpenAPI: ${stack.edgeUrl}/v1/openapi.json)
MCP endpoint: ${stack.edgeUrl}/mcp   (Streamable HTTP; header Authorization: Bearer $AGENT_TOKEN)
${hostLines()}
Demo site (TodoMVC): ${stack.todoUrl}
Tokens: AGENT_TOKEN, OWNER_TOKEN and OPERATOR_TOKEN in .dev.vars, e.g.
  curl -s -X POST ${stack.edgeUrl}/v1/runs -H "Authorization: Bearer $OWNER_TOKEN" -H 'Content-Type: application/json' \\
    -d '{"profile_id":"me","intent":"try it","origins":["${stack.siteOrigin}"]}'
  (the owner creates runs: their intent gives the agent's calls authority; the agent then claims the run)
The cron pass runs every minute${runtime === 'workers' ? ' (fired by this script: wrangler dev does not fire cron triggers)' : ''}.
Ctrl-C stops ${hosts === 1 ? 'both' : 'them all'}.`);

// wrangler dev never fires cron triggers by itself: fire the cron pass every minute, as the
// deployed Worker's trigger does (schedules, sign-in maintenance, recipe runs that go on). The
// Node and Deno entries run their own scheduler. Ctrl-C (or SIGTERM, SIGHUP) stops the stack
// through startLocalStack's stopOnSignal and exits 128 + the signal's number; another Ctrl-C a
// second or more later exits at once.
if (runtime === 'workers') {
  setInterval(() => {
    stack.triggerCron().catch((error: unknown) => {
      if (!isStoppingOnSignal()) console.error(`dev: the cron pass could not be triggered: ${error instanceof Error ? error.message : String(error)}`);
    });
  }, 60_000);
}
