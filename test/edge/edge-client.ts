import { SELF, env } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/d1';
import * as schema from '../../edge/db/schema.ts';
import { fetchUpgradeConnector } from '../../edge/host/fetch-upgrade-connector.ts';
import type { HostConnector } from '../../edge/host/host-session.ts';
import { backgroundRunner, DEFAULT_EDGE_CONFIG, type Ports, systemClock } from '../../edge/ports.ts';

/**
 * Test-side helpers for the edge inside workerd: principals seeded straight into the real D1
 * (tokens stored hashed, as the setup script does) and a small JSON client over the Worker's
 * fetch handler.
 */

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

export interface ApiAnswer {
  status: number;
  // biome-ignore lint: test bodies are read loosely and asserted exactly
  body: Record<string, any>;
}

/** Sends one request to the Worker. `body` is JSON-encoded unless `raw` is given. */
export async function call(
  method: string,
  path: string,
  options: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<ApiAnswer> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !('Content-Type' in headers)) headers['Content-Type'] = 'application/json';
  const response = await SELF.fetch(`http://edge.test${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { text };
  }
  return { status: response.status, body: parsed };
}

/** Sets the page revision the edge believes is latest, as a completed observe would. */
export async function setLatestRevision(runId: string, revision: number): Promise<void> {
  await env.DB.prepare('UPDATE runs SET latest_revision = ? WHERE id = ?').bind(revision, runId).run();
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
    host: host ?? fetchUpgradeConnector(env.HOST_URL, env.HOST_SHARED_SECRET),
    clock: systemClock,
    config: DEFAULT_EDGE_CONFIG,
    hostSecret: env.HOST_SHARED_SECRET,
    requestId: 'test',
    background: backgroundRunner('test', (promise) => {
      backgroundTasks.add(promise);
      void promise.finally(() => backgroundTasks.delete(promise));
    }),
  };
}
