import { sql } from 'drizzle-orm';
import type { HostStatus } from '../../shared/protocol.ts';
import { approvals, grantUses, type HostRow, profilePlacements, refusalCounts, runs, toolCalls } from '../db/schema.ts';
import { checkHost } from '../fleet/health.ts';
import { freeSlots } from '../fleet/placement.ts';
import { fleetHosts } from '../fleet/registry.ts';
import type { Ports } from '../ports.ts';

/**
 * `GET /metrics` (README "Security"): the edge's counts in the Prometheus text exposition format
 * (version 0.0.4), read from D1 at scrape time, plus each host's admission queue and leases from
 * `host.status` (issue 32: one sample per host, labelled with its registry id). Nothing is kept in memory: a Worker's isolates share no state, so every figure
 * is what the database (or the host) says now. Written by hand: the format is a few lines of
 * text, and the Prometheus client libraries need Node APIs that Workers lack.
 */

/** The content type of the exposition format. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Longest the scrape waits for the host's status, in ms; past it `governed_host_up` is 0. */
const HOST_STATUS_TIMEOUT_MS = 2_000;

interface Sample {
  readonly labels?: Record<string, string>;
  readonly value: number;
}

interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge';
  readonly samples: readonly Sample[];
}

/** A label value as the format wants it: backslash, double quote and newline escaped. */
function labelValue(value: string): string {
  return value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n');
}

/** One family as text: `# HELP`, `# TYPE`, then one line per sample. */
function render(family: Family): string {
  const lines = [`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`];
  for (const sample of family.samples) {
    const labels = Object.entries(sample.labels ?? {});
    const rendered = labels.length === 0 ? '' : `{${labels.map(([name, value]) => `${name}="${labelValue(value)}"`).join(',')}}`;
    lines.push(`${family.name}${rendered} ${Number.isFinite(sample.value) ? sample.value : 0}`);
  }
  return lines.join('\n');
}

/** One host of the fleet at scrape time: its row as recorded, its status (undefined: no answer), free slots and placements. */
interface HostSample {
  readonly row: HostRow;
  readonly status: HostStatus | undefined;
  readonly free: number;
  readonly placements: number;
}

/** Every host of the fleet, each asked for its status (recorded as a check) within {@link HOST_STATUS_TIMEOUT_MS}. */
async function fleetSamples(ports: Ports): Promise<HostSample[]> {
  const fleet = await fleetHosts(ports);
  const [statuses, free, placed] = await Promise.all([
    Promise.all(
      fleet.map((host) => Promise.race([checkHost(ports, host).catch(() => undefined), ports.clock.sleep(HOST_STATUS_TIMEOUT_MS).then(() => undefined)])),
    ),
    freeSlots(ports, fleet),
    ports.db.select({ hostId: profilePlacements.hostId, n: sql<number>`count(*)` }).from(profilePlacements).groupBy(profilePlacements.hostId).all(),
  ]);
  return fleet.map((row, index) => ({
    row,
    status: statuses[index],
    free: free.get(row.id) ?? 0,
    placements: Number(placed.find((entry) => entry.hostId === row.id)?.n ?? 0),
  }));
}

/**
 * Every metric family, rendered: tool calls by tool and state, settle outcomes, approval waits
 * (decided: sum and count of seconds; pending: count), grant uses, refusals by code, runs by
 * state and with a live lease, and the host's browsers, leases and admission queue.
 * @returns the exposition text, ending with a newline.
 */
export async function renderMetrics(ports: Ports): Promise<string> {
  const now = ports.clock.now();
  const [calls, settles, decided, pending, uses, refusals, runStates, leased, fleet] = await Promise.all([
    ports.db.select({ tool: toolCalls.tool, state: toolCalls.state, n: sql<number>`count(*)` }).from(toolCalls).groupBy(toolCalls.tool, toolCalls.state).all(),
    ports.db
      .select({ outcome: sql<string>`json_extract(${toolCalls.phases}, '$.settle.outcome')`, n: sql<number>`count(*)` })
      .from(toolCalls)
      .where(sql`json_extract(${toolCalls.phases}, '$.settle.outcome') is not null`)
      .groupBy(sql`1`)
      .all(),
    ports.db
      .select({ state: approvals.state, n: sql<number>`count(*)`, waitedMs: sql<number>`coalesce(sum(${approvals.decidedAt} - ${approvals.createdAt}), 0)` })
      .from(approvals)
      .where(sql`${approvals.decidedAt} is not null`)
      .groupBy(approvals.state)
      .all(),
    ports.db.select({ n: sql<number>`count(*)` }).from(approvals).where(sql`${approvals.state} = 'pending'`).get(),
    ports.db.select({ n: sql<number>`count(*)` }).from(grantUses).get(),
    ports.db.select().from(refusalCounts).all(),
    ports.db.select({ state: runs.state, n: sql<number>`count(*)` }).from(runs).groupBy(runs.state).all(),
    ports.db.select({ n: sql<number>`count(*)` }).from(runs).where(sql`${runs.leaseId} is not null and ${runs.leaseExpiresAt} > ${now}`).get(),
    fleetSamples(ports),
  ]);
  const perHost = (value: (sample: HostSample) => number | undefined): Sample[] =>
    fleet.flatMap((sample) => {
      const figure = value(sample);
      return figure === undefined ? [] : [{ labels: { host: sample.row.id }, value: figure }];
    });
  const families: Family[] = [
    {
      name: 'governed_tool_calls_total',
      help: 'Tool calls proposed, by tool and the state they are in now (rejected, denied, succeeded, failed, uncertain, ...).',
      type: 'counter',
      samples: calls.map((row) => ({ labels: { tool: row.tool, state: row.state }, value: row.n })),
    },
    {
      name: 'governed_settle_outcomes_total',
      help: 'How dispatched commands settled (ADR-0159), by outcome.',
      type: 'counter',
      samples: settles.map((row) => ({ labels: { outcome: row.outcome }, value: row.n })),
    },
    {
      name: 'governed_approval_wait_seconds_sum',
      help: 'Seconds decided approvals waited for the owner, by decision.',
      type: 'counter',
      samples: decided.map((row) => ({ labels: { decision: row.state }, value: row.waitedMs / 1000 })),
    },
    {
      name: 'governed_approval_wait_seconds_count',
      help: 'Approvals decided, by decision.',
      type: 'counter',
      samples: decided.map((row) => ({ labels: { decision: row.state }, value: row.n })),
    },
    { name: 'governed_approvals_pending', help: 'Approvals waiting for the owner now.', type: 'gauge', samples: [{ value: pending?.n ?? 0 }] },
    { name: 'governed_grant_uses_total', help: 'Grant uses charged (uses given back are not counted).', type: 'counter', samples: [{ value: uses?.n ?? 0 }] },
    {
      name: 'governed_refusals_total',
      help: 'Requests refused with a typed error, by code (rate_limited, quota_exceeded, profile_in_use, invalid_arguments, ...).',
      type: 'counter',
      samples: refusals.map((row) => ({ labels: { code: row.code }, value: row.count })),
    },
    { name: 'governed_runs', help: 'Runs by state.', type: 'gauge', samples: runStates.map((row) => ({ labels: { state: row.state }, value: row.n })) },
    {
      name: 'governed_runs_leased',
      help: 'Runs holding a live lease on a host browser, as the edge recorded it.',
      type: 'gauge',
      samples: [{ value: leased?.n ?? 0 }],
    },
    {
      name: 'governed_host_up',
      help: '1 when the browser host answered host.status for this scrape, by host.',
      type: 'gauge',
      samples: perHost((h) => (h.status ? 1 : 0)),
    },
    {
      name: 'governed_host_state',
      help: "1 for each host's state as the edge records it (healthy, unreachable, draining, drained).",
      type: 'gauge',
      samples: fleet.map((h) => ({ labels: { host: h.row.id, state: h.row.state }, value: 1 })),
    },
    {
      name: 'governed_host_slots_free',
      help: 'Browser slots free on the host by the edge records (leases, reservations, ceremonies).',
      type: 'gauge',
      samples: perHost((h) => h.free),
    },
    { name: 'governed_host_placements', help: 'Profiles placed on the host.', type: 'gauge', samples: perHost((h) => h.placements) },
    { name: 'governed_host_browsers', help: 'Browsers open or launching on the host.', type: 'gauge', samples: perHost((h) => h.status?.browsers) },
    { name: 'governed_host_browsers_max', help: 'Most browsers the host opens at once.', type: 'gauge', samples: perHost((h) => h.status?.max_browsers) },
    { name: 'governed_host_leases', help: 'Live leases on the host.', type: 'gauge', samples: perHost((h) => h.status?.leases) },
    {
      name: 'governed_host_admission_waiting',
      help: 'Lease acquisitions waiting in the host admission queue.',
      type: 'gauge',
      samples: perHost((h) => h.status?.waiting),
    },
  ];
  return `${families.map(render).join('\n')}\n`;
}
