import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ElicitResultSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/cfworker';
import { eq } from 'drizzle-orm';
import { type Context, Hono } from 'hono';
import { MCP_TOOLS } from '../../shared/mcp-tools.ts';
import { principalForToken } from '../auth/bearer-token.ts';
import { isLoopbackHostname } from '../auth/loopback.ts';
import type { Principal } from '../auth/principal.ts';
import { mcpClients } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { AppEnv } from '../http/app-env.ts';
import type { Ports } from '../ports.ts';
import { runMcpTool, runOfCall } from './tool-calls.ts';
import { callResult, consoleLinks, refusalResult, runResult, withScreenshotBlock } from './tool-results.ts';

/** Where the MCP endpoint is served (issue 18). */
export const MCP_PATH = '/mcp';
/** RFC 9728 protected resource metadata of {@link MCP_PATH} (the path-suffixed form, and the bare one). */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

const SERVER_INFO = { name: 'governed-browser', title: 'Policy-governed browser', version: '1.0.0' };
const INSTRUCTIONS =
  "A browser governed by its owner's policy. Call run_claim first; then browser_navigate, browser_observe and browser_act on that run (observe before you act: acts name element references of the latest revision). Calls that need the owner answer waiting_for_approval at once: poll call_status. End with run_report.";

/** The edge's public base URL: the configured one, else the request's own origin. */
function baseUrlOf(c: Context<AppEnv>): string {
  return (c.var.ports.config.publicUrl ?? new URL(c.req.url).origin).replace(/\/+$/, '');
}

/**
 * DNS-rebinding protection as the MCP SDK recommends: the `Host` must be the edge's public host
 * (`PUBLIC_URL`), or a loopback name when none is configured or the public host is itself a
 * loopback name (a local edge answers `localhost` and `127.0.0.1` alike, on its port; {@link isLoopbackHostname}); an `Origin`,
 * when a browser sends one, must be allowed the same way.
 * @throws DomainError('forbidden') for any other Host or Origin.
 */
function checkHostAndOrigin(c: Context<AppEnv>): void {
  const configured = c.var.ports.config.publicUrl;
  const publicUrl = configured === undefined ? undefined : new URL(configured);
  const allowed = (host: string, protocol?: string): boolean => {
    let parsed: URL;
    try {
      parsed = new URL(`${protocol ?? 'http:'}//${host}`);
    } catch {
      return false;
    }
    if (publicUrl === undefined) return isLoopbackHostname(parsed.hostname);
    if (parsed.host === publicUrl.host && (protocol === undefined || protocol === publicUrl.protocol)) return true;
    return isLoopbackHostname(publicUrl.hostname) && isLoopbackHostname(parsed.hostname) && parsed.port === publicUrl.port;
  };
  const host = c.req.header('Host') ?? new URL(c.req.url).host;
  if (!allowed(host)) throw new DomainError('forbidden', `the MCP endpoint does not answer for host ${host.slice(0, 100)}`);
  const origin = c.req.header('Origin');
  if (origin === undefined) return;
  let page: URL | undefined;
  try {
    page = new URL(origin);
  } catch {
    page = undefined;
  }
  if (page === undefined || !allowed(page.host, page.protocol))
    throw new DomainError('forbidden', `the MCP endpoint does not answer pages of ${origin.slice(0, 100)}`);
}

/**
 * The agent principal of `Authorization: Bearer <agent token>` (the HTTP API's tokens).
 * @throws DomainError('unauthenticated') with a `WWW-Authenticate` bearer challenge naming the
 *   protected resource metadata (RFC 9728) for a missing, malformed or unknown token;
 *   DomainError('principal_revoked') with the same challenge for a revoked principal's token;
 *   DomainError('forbidden') for an owner's or operator's token.
 */
async function agentOf(c: Context<AppEnv>): Promise<Principal> {
  const metadata = `${baseUrlOf(c)}${PROTECTED_RESOURCE_PATH}${MCP_PATH}`;
  const token = /^Bearer (\S+)$/.exec(c.req.header('Authorization') ?? '')?.[1];
  const principal = token === undefined ? undefined : await challenged(principalForToken(c.var.ports, token), metadata);
  if (principal === undefined) {
    throw new DomainError('unauthenticated', token === undefined ? 'send Authorization: Bearer <agent token>' : 'the bearer token is not known', undefined, {
      wwwAuthenticate: `Bearer resource_metadata="${metadata}"${token === undefined ? '' : ', error="invalid_token"'}`,
    });
  }
  if (principal.kind !== 'agent') {
    throw new DomainError('forbidden', `the MCP endpoint is for agent principals, not ${principal.kind}`, undefined, {
      wwwAuthenticate: `Bearer resource_metadata="${metadata}", error="insufficient_scope"`,
    });
  }
  return principal;
}

/** `resolving`, with a revoked token's refusal carrying the bearer challenge every MCP 401 carries. */
async function challenged(resolving: Promise<Principal | undefined>, metadata: string): Promise<Principal | undefined> {
  try {
    return await resolving;
  } catch (error) {
    if (!(error instanceof DomainError) || error.code !== 'principal_revoked') throw error;
    throw new DomainError(error.code, error.message, undefined, { wwwAuthenticate: `Bearer resource_metadata="${metadata}", error="invalid_token"` });
  }
}

interface JsonRpcMessage {
  readonly method?: unknown;
  readonly params?: {
    readonly capabilities?: { readonly elicitation?: { readonly url?: unknown } };
    readonly protocolVersion?: unknown;
    readonly clientInfo?: { readonly name?: unknown };
  };
}

/**
 * Remembers what the agent's MCP client can do, from its `initialize` (one upsert): the endpoint
 * is stateless, so later calls read from here whether the client shows URL-mode elicitations.
 */
async function rememberClient(ports: Ports, principal: Principal, messages: readonly JsonRpcMessage[]): Promise<void> {
  const initialize = messages.find((message) => message.method === 'initialize');
  if (initialize === undefined) return;
  const params = initialize.params ?? {};
  const row = {
    principalId: principal.id,
    urlElicitation: params.capabilities?.elicitation?.url !== undefined,
    protocolVersion: typeof params.protocolVersion === 'string' ? params.protocolVersion.slice(0, 32) : 'unknown',
    clientName: typeof params.clientInfo?.name === 'string' ? params.clientInfo.name.slice(0, 100) : null,
    updatedAt: ports.clock.now(),
  };
  await ports.db.insert(mcpClients).values(row).onConflictDoUpdate({ target: mcpClients.principalId, set: row });
}

async function showsUrlElicitation(ports: Ports, principal: Principal): Promise<boolean> {
  const row = await ports.db.select({ url: mcpClients.urlElicitation }).from(mcpClients).where(eq(mcpClients.principalId, principal.id)).get();
  return row?.url === true;
}

/**
 * One stateless MCP server for one request: lists {@link MCP_TOOLS} and runs them for `principal`
 * through the HTTP API's services. A call that parks for the owner answers at once; when the
 * agent's client shows URL-mode elicitations, the server also asks it, on the same response
 * stream, to show the owner's console link (consent only: the outcome still comes from the
 * owner's decision).
 */
function serverFor(ports: Ports, principal: Principal, base: string, urlElicitation: boolean): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: new CfWorkerJsonSchemaValidator() });
  const links = consoleLinks(base);
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: MCP_TOOLS.map((tool) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: tool.inputSchema,
      outputSchema: tool.outputSchema,
      annotations: { title: tool.title, ...tool.annotations },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params;
    if (!MCP_TOOLS.some((tool) => tool.name === name)) throw new McpError(ErrorCode.InvalidParams, `no tool ${name}`);
    const outcome = await runMcpTool(ports, principal, name, args);
    if (outcome.kind === 'refused') return refusalResult(outcome.error);
    // A claimed run's text carries what the agent needs to start: the owner's anticipated statements.
    if (outcome.kind === 'run') return runResult(outcome.run, { anticipation: name === 'run_claim', notes: outcome.notes ?? [] });
    const run =
      outcome.call.state === 'waiting_for_approval' || outcome.call.error?.code === 'authentication_required'
        ? await runOfCall(ports, principal, outcome.call)
        : undefined;
    const waitsForOwner = outcome.call.state === 'waiting_for_approval' ? links.inbox : run?.state === 'waiting_for_authentication' ? links.signIns : undefined;
    if (waitsForOwner !== undefined && urlElicitation) {
      const message =
        outcome.call.state === 'waiting_for_approval'
          ? `The owner's approval is needed for ${outcome.call.tool} (approval ${outcome.call.approval_id}). Open the console to decide.`
          : "The run waits for the owner to sign in. Open the console's Sign-ins to sign in through the live view.";
      // Consent only: the answer comes from the owner's decision, not from this elicitation.
      void extra
        .sendRequest(
          { method: 'elicitation/create', params: { mode: 'url', message, url: waitsForOwner, elicitationId: outcome.call.approval_id ?? outcome.call.id } },
          ElicitResultSchema,
          { timeout: 5_000 },
        )
        .catch(() => undefined);
    }
    return withScreenshotBlock(ports, callResult(outcome.call, run, links), outcome.call);
  });
  return server;
}

/** Routes of the MCP endpoint (issue 18): Streamable HTTP at {@link MCP_PATH}, stateless, and its RFC 9728 metadata. */
export const mcpRoutes = new Hono<AppEnv>()
  .get(`${PROTECTED_RESOURCE_PATH}${MCP_PATH}`, (c) => c.json(resourceMetadata(baseUrlOf(c)), 200))
  .get(PROTECTED_RESOURCE_PATH, (c) => c.json(resourceMetadata(baseUrlOf(c)), 200))
  .post(MCP_PATH, async (c) => {
    checkHostAndOrigin(c);
    const principal = await agentOf(c);
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      throw new DomainError('malformed_json', 'the body is not JSON (a JSON-RPC message or batch)');
    }
    const messages = (Array.isArray(body) ? body : [body]).filter((message): message is JsonRpcMessage => typeof message === 'object' && message !== null);
    const calls = messages.some((message) => message.method === 'tools/call');
    const urlElicitation = calls && (await showsUrlElicitation(c.var.ports, principal));
    // Plain JSON answers unless this request may ask the client to show a link (an SSE stream then).
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: !urlElicitation });
    const server = serverFor(c.var.ports, principal, baseUrlOf(c), urlElicitation);
    await server.connect(transport);
    const response = await transport.handleRequest(c.req.raw, { parsedBody: body });
    // Only an initialize the SDK accepted (alone, as the protocol wants it) says what the client can do.
    if (response.status === 200 && !Array.isArray(body)) await rememberClient(c.var.ports, principal, messages);
    return response;
  })
  .on(['GET', 'DELETE'], MCP_PATH, (c) => {
    checkHostAndOrigin(c);
    // Stateless: no stream of server messages to resume, no session to end.
    return c.body(null, 405, { Allow: 'POST' });
  });

/** RFC 9728 metadata of the MCP endpoint under `base`. */
function resourceMetadata(base: string) {
  return {
    resource: `${base}${MCP_PATH}`,
    resource_name: 'Policy-governed browser (MCP)',
    bearer_methods_supported: ['header'],
    resource_documentation: `${base}/docs`,
  };
}
