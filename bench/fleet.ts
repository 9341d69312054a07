/**
 * The fleet of browser hosts (issue 32), two figures, each printed beside its target:
 *
 * 1. Placement overhead per lease at the edge: what placing a profile costs (the fleet read, the
 *    placement read and insert, the free-slot count), on the Node edge's own SQLite database (no
 *    host is contacted), beside a first lease (placement and the reservation that counts the
 *    host's slots) and, as the reference, the lease of a profile that is already placed
 *    (affinity), all in the same run. Target: at most 10 ms median.
 * 2. Admitted concurrency with one, two and three hosts: a local stack of N headless hosts, and
 *    3N + 1 runs on distinct profiles that each navigate once; how many are admitted before the
 *    first `429 fleet_full`. Target: 3, 6 and 9.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { hosts, principals, runs } from '../edge/db/schema.ts';
import { openSqliteDatabase } from '../edge/db/sqlite.ts';
import { placeProfile } from '../edge/fleet/placement.ts';
import { configuredHostId } from '../edge/fleet/registry.ts';
import { HostUnreachable } from '../edge/host/host-session.ts';
import { embeddedAnticipator } from '../edge/memories/lexical-anticipator.ts';
import { backgroundRunner, DEFAULT_EDGE_CONFIG, type Ports, systemClock } from '../edge/ports.ts';
import { reserveLease } from '../edge/quotas/lease-availability.ts';
import { DEFAULT_QUOTAS } from '../edge/quotas/quota-config.ts';
import { startLocalStack } from '../scripts/local-stack.ts';
import { row, summary } from './stats.ts';

const LEASES = 300;
const HOST_URLS = ['ws://127.0.0.1:21001', 'ws://127.0.0.1:21002', 'ws://127.0.0.1:21003'];

async function placementOverhead(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-fleet-'));
  const database = await openSqliteDatabase({ path: join(dir, 'edge.sqlite'), migrationsFolder: join(import.meta.dirname, '..', 'drizzle') });
  try {
    const ports: Ports = {
      db: database.drizzle(),
      dial: () => ({ connect: async () => Promise.reject(new HostUnreachable('no host is contacted in this benchmark')) }),
      artifacts: { put: async () => {}, get: async () => null, delete: async () => {} },
      clock: systemClock,
      anticipator: embeddedAnticipator,
      config: { ...DEFAULT_EDGE_CONFIG, hostUrls: HOST_URLS, quotas: { ...DEFAULT_QUOTAS, leasedBrowsersPerOwner: 1_000_000 } },
      hostSecret: 'bench-shared-secret-of-at-least-32-bytes!!',
      snapshotSecret: 'bench-shared-secret-of-at-least-32-bytes!!',
      requestId: 'bench',
      background: backgroundRunner('bench'),
    };
    const now = Date.now();
    await ports.db.insert(principals).values({ id: 'prn_bench_owner', kind: 'owner', ownerId: 'prn_bench_owner', tokenHash: 'x'.repeat(64), createdAt: now });
    // Room for every lease: the figure is the bookkeeping, not a full host.
    for (const url of HOST_URLS)
      await ports.db.insert(hosts).values({ id: await configuredHostId(url), url, source: 'config', maxBrowsers: 1_000_000, createdAt: now });
    const newRun = async (index: number, profile: string) => {
      const row = {
        id: `run_bench_${index}`,
        ownerId: 'prn_bench_owner',
        createdBy: 'prn_bench_owner',
        claimedBy: null,
        profileId: profile,
        intent: 'bench',
        origins: ['http://127.0.0.1:9'],
        state: 'running' as const,
        kind: 'interactive' as const,
        scheduleId: null,
        policyProfile: 'default',
        pinnedVersions: null,
        claimExpiresAt: null,
        deadlineAt: now + 3_600_000,
        leaseId: null,
        leaseHostId: null,
        leaseHostUrl: null,
        leaseGeneration: null,
        leaseExpiresAt: null,
        latestRevision: null,
        latestUrl: null,
        reportSummary: null,
        signInAttempts: 0,
        recipeId: null,
        recipeVersion: null,
        recipeHash: null,
        createdAt: now,
        updatedAt: now,
      };
      await ports.db.insert(runs).values(row);
      return row;
    };
    const firstLease: number[] = [];
    const placedLease: number[] = [];
    const placementAlone: number[] = [];
    for (let index = 0; index < LEASES; index++) {
      const run = await newRun(index, `bench-first-${index}`);
      const started = performance.now();
      await reserveLease(ports, run);
      firstLease.push(performance.now() - started);
      const alone = performance.now();
      await placeProfile(ports, `bench-alone-${index}`);
      placementAlone.push(performance.now() - alone);
    }
    // The same profiles again, already placed: only the reservation (and its slot count) remains.
    for (let index = 0; index < LEASES; index++) {
      const previous = `run_bench_${index}`;
      await ports.db.update(runs).set({ state: 'completed' }).where(eq(runs.id, previous));
      const run = await newRun(LEASES + index, `bench-first-${index}`);
      const started = performance.now();
      await reserveLease(ports, run);
      placedLease.push(performance.now() - started);
    }
    const overhead = summary(placementAlone).median;
    console.log(`\nPlacement per lease at the edge (Node edge, SQLite, ${LEASES} leases, 3 hosts):`);
    console.log(row('first lease: placement + reservation', firstLease));
    console.log(row('reference: reservation of a placed profile', placedLease));
    console.log(row('placement alone (placeProfile)', placementAlone));
    console.log(
      `  placement overhead per lease: ${overhead.toFixed(1)} ms median (target at most 10 ms); a first lease against a placed one: ${(summary(firstLease).median / summary(placedLease).median).toFixed(2)}x`,
    );
  } finally {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function admittedConcurrency(hostCount: number): Promise<number> {
  const stack = await startLocalStack({
    database: 'fresh',
    headless: true,
    hosts: hostCount,
    edgeVars: { ADMISSION_WAIT_MS: '500', QUOTA_LEASED_BROWSERS_PER_OWNER: '100', QUOTA_OPEN_RUNS_PER_OWNER: '100', QUOTA_RUNS_PER_MINUTE_PER_OWNER: '100' },
  });
  try {
    let admitted = 0;
    for (let index = 0; index < 3 * hostCount + 1; index++) {
      const created = await fetch(`${stack.edgeUrl}/v1/runs`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${stack.tokens.owner}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ profile_id: `bench-concurrency-${index}`, intent: 'hold a browser', origins: [stack.siteOrigin], deadline_ms: 600_000 }),
      });
      const run = (await created.json()) as { id: string };
      const navigated = await fetch(`${stack.edgeUrl}/v1/runs/${run.id}/tool-calls`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${stack.tokens.agent}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ tool: 'browser.navigate', version: '1.4.0', arguments: { url: `${stack.siteOrigin}/` } }),
      });
      const body = (await navigated.json()) as { state?: string; error?: { code: string } };
      if (navigated.status === 429 && body.error?.code === 'fleet_full') break;
      if (navigated.status !== 200 || body.state !== 'succeeded') throw new Error(`run ${index}: ${navigated.status} ${JSON.stringify(body).slice(0, 300)}`);
      admitted++;
    }
    return admitted;
  } finally {
    await stack.stop();
  }
}

await placementOverhead();
console.log('\nAdmitted concurrency (headless hosts, 3 browsers each; runs that hold a browser until the first 429 fleet_full):');
for (const hostCount of [1, 2, 3]) {
  const admitted = await admittedConcurrency(hostCount);
  console.log(`  ${hostCount} host${hostCount === 1 ? ' ' : 's'}: ${admitted} admitted (target ${3 * hostCount})`);
}
