/**
 * `npm run dev` (`dev:node`, `dev:deno`): after scripts/setup.mjs, starts the browser host
 * (headed under Xvfb when no display is set) and the edge on loopback in the foreground, with the
 * tokens from `.dev.vars`, and stops both on Ctrl-C. The edge runs under `wrangler dev` with the
 * local D1, or with `--runtime node` / `--runtime deno` on Node or Deno over `.data/edge.sqlite`.
 * Edge port: EDGE_PORT (default 8787); host port: HOST_PORT (default 8790).
 */
import { EDGE_RUNTIMES, type EdgeRuntime, startLocalStack } from './local-stack.ts';

/** The local owner's principal id (scripts/setup.mjs seeds it). */
const LOCAL_OWNER_ID = 'prn_local_owner';

const port = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value <= 0 || value > 65_535) throw new Error(`${name} must be a TCP port`);
  return value;
};

const runtimeArg = process.argv.indexOf('--runtime');
const runtime = (runtimeArg >= 0 ? process.argv[runtimeArg + 1] : 'workers') as EdgeRuntime;
if (!EDGE_RUNTIMES.includes(runtime)) throw new Error(`--runtime must be one of ${EDGE_RUNTIMES.join(', ')}`);

const stack = await startLocalStack({
  runtime,
  edgePort: port('EDGE_PORT', 8787),
  hostPort: port('HOST_PORT', 8790),
  database: 'default',
  headless: process.env.HOST_HEADLESS === '1',
  echo: true,
});
/** A one-time sign-in link to the owner's console for the local owner (valid 15 minutes, once). */
async function consoleLink(): Promise<string> {
  const response = await fetch(`${stack.edgeUrl}/console/links`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${stack.tokens.operator}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ owner_id: LOCAL_OWNER_ID }),
  });
  if (response.status !== 201) return `(no sign-in link: HTTP ${response.status}; sign in at ${stack.edgeUrl}/console/sign-in with OWNER_TOKEN)`;
  return ((await response.json()) as { url: string }).url;
}

console.log(`
Owner console: ${await consoleLink()}
  (a one-time sign-in link for the local owner: open it and press its button; valid for 15 minutes; later, sign in at ${stack.edgeUrl}/console/sign-in with OWNER_TOKEN)
Edge (${runtime}):  ${stack.edgeUrl}   (API reference: ${stack.edgeUrl}/docs, OpenAPI: ${stack.edgeUrl}/v1/openapi.json)
Host:  ${stack.hostUrl}
Demo site (TodoMVC): ${stack.todoUrl}
Tokens: AGENT_TOKEN, OWNER_TOKEN and OPERATOR_TOKEN in .dev.vars, e.g.
  curl -s -X POST ${stack.edgeUrl}/v1/runs -H "Authorization: Bearer $AGENT_TOKEN" -H 'Content-Type: application/json' \\
    -d '{"profile_id":"me","intent":"try it","origins":["${stack.siteOrigin}"]}'
Ctrl-C stops both.`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await stack.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
