import { env, SELF } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/d1';
import { beforeEach } from 'vitest';
import type { z } from 'zod';
import { r2ArtifactStore } from '../../../edge/artifacts/artifact-store.ts';
import * as schema from '../../../edge/db/schema.ts';
import { configuredHostId } from '../../../edge/fleet/registry.ts';
import { fetchUpgradeConnector } from '../../../edge/host/fetch-upgrade-connector.ts';
import type { HostConnector } from '../../../edge/host/host-session.ts';
import { embeddedAnticipator } from '../../../edge/memories/lexical-anticipator.ts';
import { backgroundRunner, DEFAULT_EDGE_CONFIG, type Ports, systemClock } from '../../../edge/ports.ts';
import type {
  ApprovalList as ApprovalListSchema,
  DecisionResponse as DecisionResponseSchema,
  GrantList as GrantListSchema,
  HealthView as HealthViewSchema,
} from '../../../shared/api.ts';
import type { ErrorBody } from '../../../shared/errors.ts';

/**
 * Test-side helpers for the edge inside workerd: principals seeded straight into the real D1
 * (tokens stored hashed, as the setup script does), a small JSON client over the Worker's fetch
 * handler whose answers are typed with the shared API types, and direct reads of the D1.
 */

export { errorBody } from '../../support/error-body.ts';
export type { ErrorBody };
/** Answer bodies whose schemas shared/api.ts exports without a type of the same name. */
export type ApprovalList = z.infer<typeof ApprovalListSchema>;
export type DecisionResponse = z.infer<typeof DecisionResponseSchema>;
export type GrantList = z.infer<typeof GrantListSchema>;
export type HealthView = z.infer<typeof HealthViewSchema>;

export interface Party {
  id: string;
  token: string;
}

export interface Parties {
  owner: Party;
  agent: Party;
  operator: Party;
  /** An agent of the same owner, for "two agents" cases. */
  secondAgent: Party;
  /** An owner and agent of someone else, for isolation cases. */
  strangerOwner: Party;
  strangerAgent: Party;
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

function randomToken(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(24)), (b) => b.toString(16).padStart(2, '0')).join('');
}

async function seedPrincipal(kind: 'owner' | 'agent' | 'operator', ownerId: string | null): Promise<Party> {
  const id = `prn_${randomToken().slice(0, 20)}`;
  const token = randomToken();
  await env.DB.prepare('INSERT INTO principals (id, kind, owner_id, token_hash, label, created_at) VALUES (?, ?, ?, ?, ?, ?)')
    .bind(id, kind, ownerId ?? id, await sha256Hex(token), `test ${kind}`, Date.now())
    .run();
  return { id, token };
}

/** Seeds a fresh owner with an agent and an operator, plus a stranger owner and agent. */
export async function seedParties(): Promise<Parties> {
  await standInHostsWithRoom();
  const owner = await seedPrincipal('owner', null);
  const strangerOwner = await seedPrincipal('owner', null);
  return {
    owner,
    agent: await seedPrincipal('agent', owner.id),
    operator: await seedPrincipal('operator', owner.id),
    secondAgent: await seedPrincipal('agent', owner.id),
    strangerOwner,
    strangerAgent: await seedPrincipal('agent', strangerOwner.id),
  };
}

/** The host URLs edge tests configure: the Worker's binding and the app-level ports' default. */
const STAND_IN_HOST_URLS = [env.HOST_URL, DEFAULT_EDGE_CONFIG.hostUrls[0]!];

/**
 * The configured stand-in hosts, healthy and with room for every run the file's tests leave
 * leased: tests share one database per file, and a host's free slots count every live lease on
 * it (issue 32). Fleet tests register hosts of their own with real capacities.
 */
async function standInHostsWithRoom(): Promise<void> {
  for (const url of STAND_IN_HOST_URLS) {
    const id = await configuredHostId(url);
    await env.DB.prepare(
      `INSERT INTO hosts (id, url, source, state, max_browsers, failed_checks, created_at) VALUES (?, ?, 'config', 'healthy', 10000, 0, ?)
       ON CONFLICT (id) DO UPDATE SET state = 'healthy', max_browsers = 10000, failed_checks = 0`,
    )
      .bind(id, url, Date.now())
      .run();
  }
}

/**
 * Fresh parties for every test of the calling file: the returned object is filled anew before
 * each test, so helpers built over it once always see the current test's parties.
 */
export function partiesForEachTest(): Parties {
  const parties = {} as Parties;
  beforeEach(async () => {
    Object.assign(parties, await seedParties());
  });
  return parties;
}

/**
 * One answer of the Worker. `Body` is what the caller expects the body to be, named with the
 * shared API types (`RunView`, `ToolCallView`, ...) or `ErrorBody` for a refusal; a body that is
 * not JSON reads as `{text}`.
 */
export interface ApiAnswer<Body = unknown> {
  status: number;
  body: Body;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
}

/** Sends one request to the Worker. `body` is JSON-encoded unless `raw` is given. */
export async function call<Body = unknown>(method: string, path: string, options: CallOptions = {}): Promise<ApiAnswer<Body>> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !('Content-Type' in headers)) headers['Content-Type'] = 'application/json';
  const response = await SELF.fetch(`http://edge.test${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = {};
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = { text };
  }
  return { status: response.status, body: parsed as Body };
}

/** A request the test expects to be refused: the body is the one error shape of the API. */
export function callError(method: string, path: string, options: CallOptions = {}): Promise<ApiAnswer<ErrorBody>> {
  return call<ErrorBody>(method, path, options);
}

/** The first row `sql` selects in the test's D1, or null. */
export async function row(sql: string, ...binds: unknown[]) {
  return env.DB.prepare(sql)
    .bind(...binds)
    .first<Record<string, unknown>>();
}

/** Sets the page revision the edge believes is latest, as a completed observe would. */
export async function setLatestRevision(runId: string, revision: number): Promise<void> {
  await env.DB.prepare('UPDATE runs SET latest_revision = ? WHERE id = ?').bind(revision, runId).run();
  const run = await env.DB.prepare('SELECT latest_url FROM runs WHERE id = ?').bind(runId).first<{ latest_url: string | null }>();
  await recordObservedPage(runId, revision, run?.latest_url ?? 'http://127.0.0.1:8123/');
}

/** The controls every stand-in observation shows: `button "Control eN" [ref=eN]` for e1 to e9. */
export const OBSERVED_CONTROLS = Array.from({ length: 9 }, (_, index) => `  - button "Control e${index + 1}" [ref=e${index + 1}]`).join('\n');

/**
 * Stores an observation of `revision` at `url` among the run's calls, as if the agent had read
 * it (long before the current turn, so it does not taint it): acts must name a reference some
 * observation of the revision showed. Its snapshot holds {@link OBSERVED_CONTROLS}.
 */
export async function recordObservedPage(runId: string, revision: number, url: string): Promise<void> {
  const observation = {
    revision,
    url,
    title: 'Observed page',
    settle: { outcome: 'not_waited', elapsed_ms: 0, pending_at_entry: 0, overflow: false },
    window: { scope: { start_node: 0, end_node: 10, total_nodes: 10 }, truncated: false },
    snapshot: `- main [ref=e0]:\n${OBSERVED_CONTROLS}`,
  };
  await env.DB.prepare(
    `INSERT OR REPLACE INTO tool_calls (id, run_id, principal_id, tool, version, arguments, arguments_hash, state, result, phases, created_at, updated_at)
     VALUES (?, ?, 'fixture', 'browser.observe', '1.2.0', '{}', 'fixture', 'succeeded', ?, '{}', 0, 0)`,
  )
    .bind(`call_seen_${runId}_${revision}`, runId, JSON.stringify(observation))
    .run();
}

/** Row counts of the tables a request could change. */
export async function counts(): Promise<Record<string, number>> {
  const tables = ['runs', 'messages', 'tool_calls', 'approvals', 'effects', 'sign_in_episodes', 'sign_in_waits', 'notices', 'ceremony_events'];
  const out: Record<string, number> = {};
  for (const table of tables) {
    const row = await env.DB.prepare(`SELECT count(*) AS n FROM ${table}`).first<{ n: number }>();
    out[table] = row?.n ?? 0;
  }
  return out;
}

/** Sets the page the edge believes the run is on: its latest revision and URL. */
export async function setLatestPage(runId: string, revision: number, url: string): Promise<void> {
  await env.DB.prepare('UPDATE runs SET latest_revision = ?, latest_url = ? WHERE id = ?').bind(revision, url, runId).run();
  await recordObservedPage(runId, revision, url);
}

/** Background tasks the pipeline handed off (a sign-in ceremony's start), not yet finished. */
const backgroundTasks = new Set<Promise<unknown>>();

/**
 * Waits until every background task handed off through {@link workerdPorts} has finished,
 * including tasks those tasks started. A test that asserts what a ceremony's start records (the
 * episode's notice, its ceremony state) waits for this first.
 */
export async function backgroundSettled(): Promise<void> {
  while (backgroundTasks.size > 0) await Promise.allSettled([...backgroundTasks]);
}

/**
 * The edge's ports over the test's real D1, for calling pipeline functions directly: the host is
 * `host`, or the bindings' closed port (anything dispatched fails `host_unavailable`). Background
 * tasks run detached, as on Deno and Node, and {@link backgroundSettled} waits for them.
 */
export function workerdPorts(host?: HostConnector): Ports {
  return {
    db: drizzle(env.DB, { schema }),
    // A stand-in serves every host of the fleet; without one, each URL is dialled (and closed).
    dial: (hostUrl) => host ?? fetchUpgradeConnector(hostUrl, env.HOST_SHARED_SECRET),
    artifacts: r2ArtifactStore(env.ARTIFACTS),
    clock: systemClock,
    config: DEFAULT_EDGE_CONFIG,
    anticipator: embeddedAnticipator,
    hostSecret: env.HOST_SHARED_SECRET,
    snapshotSecret: env.HOST_SHARED_SECRET,
    requestId: 'test',
    background: backgroundRunner('test', (promise) => {
      backgroundTasks.add(promise);
      void promise.finally(() => backgroundTasks.delete(promise));
    }),
  };
}

/**
 * A JSON POST to `app` (a `createApp` over stand-in ports) as the holder of `token`: the status,
 * the body parsed, and the answer's D1 statement and round-trip counts (`X-D1-Statements` and
 * `X-D1-Round-Trips`, 0 when not counted).
 */
export function poster(app: { request(input: string, init: RequestInit): Response | Promise<Response> }) {
  return async (path: string, token: string, body: unknown) => {
    const response = await app.request(`http://edge.test${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      statements: Number(response.headers.get('X-D1-Statements')),
      roundTrips: Number(response.headers.get('X-D1-Round-Trips')),
      body: (await response.json()) as Record<string, unknown>,
    };
  };
}
