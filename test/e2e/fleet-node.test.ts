import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect } from 'vitest';
import { hostProfileId } from '../../edge/profiles/bindings.ts';
import { ApiClient } from '../../scripts/api-client.ts';
import { edgeLaunchOf } from '../../scripts/local-edge.ts';
import { freePort, startProcess, stopProcess, waitFor } from '../../scripts/local-processes.ts';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { HostList, type ToolCallView } from '../../shared/api.ts';
import { stackTest } from '../support/stack-fixture.ts';
import { until } from '../support/until.ts';

// The fleet with the edge on Node (issue 32): two real hosts, the edge's SQLite file and its
// snapshots as files. Two edge processes over the same database race to place profiles; and a
// snapshot damaged in the store is refused on restore, the profile starting from the older one.

const it = stackTest({
  runtime: 'node',
  hosts: 2,
  headless: true,
  edgeVars: { ADMISSION_WAIT_MS: '1000', QUOTA_LEASED_BROWSERS_PER_OWNER: '20', QUOTA_OPEN_RUNS_PER_OWNER: '40', QUOTA_RUNS_PER_MINUTE_PER_OWNER: '60' },
});

/** A proposal as the HTTP answer. */
async function propose(client: ApiClient, runId: string, tool: string, args: Record<string, unknown>) {
  const response = await fetch(`${client.baseUrl}/v1/runs/${runId}/tool-calls`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${client.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ tool, version: '1.4.0', arguments: args }),
  });
  return { status: response.status, body: (await response.json()) as ToolCallView & { error?: { code: string } } };
}

/** A second Node edge over the stack's database and snapshot files, on its own port; stopped by `stop`. */
async function secondEdge(stack: LocalStack) {
  const edgePort = await freePort();
  const launch = edgeLaunchOf('node', {
    edgePort,
    inspectorPort: await freePort(),
    hostUrls: stack.hosts.map((host) => host.url),
    hostSecret: stack.hostSecret,
    persistTo: undefined,
    sqlitePath: stack.sqlitePath,
    artifactsDir: join(dirname(stack.sqlitePath!), 'artifacts'),
    edgeVars: { ADMISSION_WAIT_MS: '1000', QUOTA_LEASED_BROWSERS_PER_OWNER: '20', QUOTA_OPEN_RUNS_PER_OWNER: '40', QUOTA_RUNS_PER_MINUTE_PER_OWNER: '60' },
  });
  const started = startProcess('edge-2', launch.command, launch.args, { ...process.env, ...launch.env }, process.env.E2E_ECHO === '1');
  const url = `http://127.0.0.1:${edgePort}`;
  await waitFor('the second edge', started, async () => (await fetch(`${url}/v1/health`).catch(() => undefined))?.status === 200, 60_000);
  return { url, stop: () => stopProcess(started) };
}

describe('a fleet behind Node edges', () => {
  it('two edges racing to place the same profiles end with one placement each, on one host', async ({ stack, owner, agent, ownerId }) => {
    const edge2 = await secondEdge(stack);
    try {
      const agent2 = new ApiClient(edge2.url, stack.tokens.agent);
      const profiles = ['race-a', 'race-b', 'race-c'];
      const pairs = await Promise.all(
        profiles.map(async (profile) => [
          await owner.createRun({ profile_id: profile, intent: 'race', origins: [stack.siteOrigin], deadline_ms: 600_000 }),
          await owner.createRun({ profile_id: profile, intent: 'race again', origins: [stack.siteOrigin], deadline_ms: 600_000 }),
        ]),
      );
      // Both runs of each profile propose at once, one through each edge.
      const answers = await Promise.all(
        pairs.flatMap(([first, second]) => [
          propose(agent, first!.id, 'browser.navigate', { url: `${stack.siteOrigin}/` }),
          propose(agent2, second!.id, 'browser.navigate', { url: `${stack.siteOrigin}/` }),
        ]),
      );
      for (const [index, profile] of profiles.entries()) {
        const [rows] = await stack.queryD1(
          `SELECT host_id, generation FROM profile_placements WHERE host_profile_id = '${await hostProfileId(ownerId, profile)}'`,
        );
        expect(rows).toHaveLength(1);
        expect(rows![0]!.generation).toBe(1);
        const pair = answers.slice(index * 2, index * 2 + 2);
        // One run holds the profile; the other is refused profile_in_use (or served after it, on the same host).
        const served = pair.filter((answer) => answer.status === 200);
        expect(served.length).toBeGreaterThanOrEqual(1);
        for (const answer of served) expect(answer.body.phases.dispatch?.host_id).toBe(rows![0]!.host_id);
        for (const answer of pair.filter((candidate) => candidate.status !== 200)) expect(answer.body.error?.code).toBe('profile_in_use');
      }
      for (const [first, second] of pairs) {
        await agent.report(first!.id, 'completed', 'done');
        await agent.report(second!.id, 'completed', 'done');
      }
    } finally {
      await edge2.stop();
    }
  });

  it('a snapshot damaged in the store is refused on restore with its reason, and the profile starts from the older good one', async ({
    stack,
    owner,
    agent,
    operator,
    ownerId,
  }) => {
    const profile = 'damaged';
    const hostProfile = await hostProfileId(ownerId, profile);
    const lease = async () => {
      const run = await owner.createRun({ profile_id: profile, intent: 'leave a snapshot', origins: [stack.siteOrigin], deadline_ms: 600_000 });
      const answer = await propose(agent, run.id, 'browser.navigate', { url: `${stack.siteOrigin}/` });
      expect(answer.status).toBe(200);
      return { run, hostId: String(answer.body.phases.dispatch?.host_id) };
    };
    const stored = async (version: number) =>
      until(
        async () => {
          const [rows] = await stack.queryD1(`SELECT max(version) AS v FROM profile_snapshots WHERE host_profile_id = '${hostProfile}'`);
          return Number(rows?.[0]?.v ?? 0) >= version || undefined;
        },
        `snapshot version ${version} of ${profile}`,
        30_000,
        250,
      );
    const first = await lease();
    await agent.report(first.run.id, 'completed', 'first lease');
    await stored(1);
    const second = await lease();
    await agent.report(second.run.id, 'completed', 'second lease');
    await stored(2);

    // Version 2 is damaged where it is kept; then its host dies, so the profile must be restored.
    const [keys] = await stack.queryD1(`SELECT store_key FROM profile_snapshots WHERE host_profile_id = '${hostProfile}' AND version = 2`);
    const file = join(dirname(stack.sqlitePath!), 'artifacts', String(keys?.[0]?.store_key));
    const bytes = readFileSync(file);
    const middle = Math.floor(bytes.length / 2);
    bytes[middle] = (bytes[middle] ?? 0) ^ 0xff;
    writeFileSync(file, bytes);
    const hosts = (await operator.request('GET', '/v1/hosts', HostList)).body.hosts;
    const lost = stack.hosts.find((host) => host.id === hosts.find((view) => view.id === second.hostId)?.reported_host_id)!;
    await lost.kill('SIGKILL');

    const third = await lease();
    expect(third.hostId).not.toBe(second.hostId);
    const [rows] = await stack.queryD1(`SELECT version, refused_reason FROM profile_snapshots WHERE host_profile_id = '${hostProfile}' ORDER BY version`);
    expect(rows).toEqual([
      { version: 1, refused_reason: null },
      { version: 2, refused_reason: expect.stringMatching(/SHA-256|digest/i) },
    ]);
    const newHost = stack.hosts.find((host) => host.id !== lost.id)!;
    expect(newHost.output().some((line) => line.includes(`profile ${hostProfile}: snapshot version 2 refused`))).toBe(true);
    expect((await agent.run(third.run.id)).placement).toMatchObject({ generation: 2, reason: 'host_unreachable' });
    await agent.report(third.run.id, 'completed', 'third lease');
    await lost.start();
  });
});
