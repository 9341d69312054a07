import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect } from 'vitest';
import { z } from 'zod';
import { evidenceBundleOf } from '../../edge/memories/evaluation.ts';
import { ApiClient } from '../../scripts/api-client.ts';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { IssuedPrincipal, ScheduleView } from '../../shared/api.ts';
import { ANTICIPATION_CALL_BUDGET, AnticipatedMemory, AnticipationRecordView, MemoryView, RunAnticipationView, SuggestionList } from '../../shared/memories.ts';
import { FROZEN_CORPORA } from '../../shared/memory-corpora.ts';
import {
  type CorpusScore,
  EVIDENCE_REPEATS,
  type EvidenceBundle,
  EvidenceRecordList,
  EvidenceRecordView,
  type MemoryCorpus,
} from '../../shared/memory-evidence.ts';
import { PolicyProfileView } from '../../shared/policy.ts';
import { type AnthropicStandIn, compoundOfFirstTwo, copyStatements, failWith, startAnthropicStandIn } from '../support/anthropic-stand-in.ts';
import { blockStackTest } from '../support/stack-fixture.ts';
import { until } from '../support/until.ts';

// Owner memories and verified anticipation (issue 34, ADR-0168) through real processes: the owner
// writes memories over the API, an operator publishes evidence for the policy profile in force,
// and runs (created by the owner, fired by a schedule) carry the verified anticipations, on the
// run and in MCP `run_claim`; another owner's memories and retired ones never. A second edge is
// started with the vendor's API key and base URL pointing at a local stand-in of the vendor's API:
// it asks the model adapter, only once evidence for `anthropic/<model>` is published, and sends
// the stand-in nothing but the run's intent and the owner's active memories.

const MODEL = 'claude-haiku-4-5';
const MODEL_PROVIDER = `anthropic/${MODEL}`;
const EMBEDDED_PROVIDER = 'embedded-lexical/1';

/** What a run shows of its anticipation (`RunView.anticipated`, `RunView.anticipation`), read apart from the rest of the run. */
const RunAnticipation = z.object({ id: z.string(), intent: z.string(), anticipated: z.array(AnticipatedMemory), anticipation: RunAnticipationView.nullable() });
type RunAnticipation = z.infer<typeof RunAnticipation>;

const STATEMENTS = {
  seat: 'I prefer aisle seats on flights over two hours.',
  diet: 'I am vegetarian: pick vegetarian meals on flights.',
  folder: 'My frequent-flyer number is in the travel folder, not in the browser.',
  retired: 'I prefer window seats on flights.',
  theirs: 'I prefer middle seats on every flight.',
};
const FLIGHT_INTENT = 'Book a flight to Oslo next Friday with an aisle seat and a vegetarian meal.';

/** The owner writes a memory (`POST /v1/memories`). */
async function remember(owner: ApiClient, statement: string): Promise<MemoryView> {
  return (await owner.request('POST', '/v1/memories', MemoryView, { statement }, [201])).body;
}

/** The owner retires a memory (`PATCH /v1/memories/{id}`). */
async function retire(owner: ApiClient, memory: MemoryView): Promise<MemoryView> {
  return (await owner.request('PATCH', `/v1/memories/${memory.id}`, MemoryView, { state: 'retired', revision: memory.revision }, [200])).body;
}

/** A new owner, made by the operator (`POST /v1/principals`), and its API client. */
async function anotherOwner(stack: LocalStack, operator: ApiClient): Promise<ApiClient> {
  const issued = (await operator.request('POST', '/v1/principals', IssuedPrincipal, { kind: 'owner', label: 'another owner' }, [201])).body;
  return new ApiClient(stack.edgeUrl, issued.token);
}

/** The policy profile `default` in force: its version and hash. */
async function defaultProfile(owner: ApiClient): Promise<PolicyProfileView> {
  return (await owner.request('GET', '/v1/policy-profiles/default', PolicyProfileView)).body;
}

/** A corpus scored as fully recalled and represented in one repeat, with no boundary failure. */
function perfectScore(corpus: MemoryCorpus): CorpusScore {
  const needed = corpus.cases.reduce((sum, c) => sum + c.needed.length, 0);
  const seeded = corpus.cases.reduce((sum, c) => sum + c.seeded.length, 0);
  return {
    cases: corpus.cases.length,
    needed,
    directly_recalled: needed,
    seeded,
    represented: seeded,
    unrepresented: [],
    boundary_failures: [],
    refused: 0,
    provider_calls: corpus.cases.length,
    cost_usd: 0,
  };
}

/**
 * `score` with only `recalled` needed memories recalled, its counts kept consistent (the edge
 * refuses others as `evidence_mismatch`): at most that many seeded clauses represented, the rest
 * listed as unrepresented.
 */
function recalledOnly(corpus: MemoryCorpus, score: CorpusScore, recalled: number): CorpusScore {
  const seeded = corpus.cases.flatMap((c) => c.seeded.map((id) => `${c.id}:${id}`));
  const represented = Math.min(seeded.length, recalled);
  return { ...score, directly_recalled: recalled, represented, unrepresented: seeded.slice(represented) };
}

/**
 * An evidence bundle for `provider` under `profile`, over the shipped corpora: passing, or with
 * `holdoutRecalled` needed holdout memories recalled per repeat (under the floor when few).
 */
async function evidenceBundle(provider: string, profile: PolicyProfileView, holdoutRecalled?: number): Promise<EvidenceBundle> {
  const holdout = perfectScore(FROZEN_CORPORA.holdout);
  const repeat = {
    development: perfectScore(FROZEN_CORPORA.development),
    holdout: holdoutRecalled === undefined ? holdout : recalledOnly(FROZEN_CORPORA.holdout, holdout, holdoutRecalled),
  };
  const repeats = Array.from({ length: EVIDENCE_REPEATS }, () => structuredClone(repeat));
  return evidenceBundleOf(provider, profile, FROZEN_CORPORA, repeats, new Date());
}

/** The operator publishes a passing bundle for `provider` under the profile in force (`POST /v1/memory-evidence`). */
async function publishEvidence(operator: ApiClient, owner: ApiClient, provider: string): Promise<EvidenceRecordView> {
  const bundle = await evidenceBundle(provider, await defaultProfile(owner));
  return (await operator.request('POST', '/v1/memory-evidence', EvidenceRecordView, bundle, [201])).body;
}

const scratch = mkdtempSync(join(tmpdir(), 'memories-e2e-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * The operator's way to evidence: `npm run memory:evaluate` with the embedded provider, reading
 * the profile in force from the stack's edge and publishing the bundle there; its output and exit code.
 */
function evaluateAndPublish(stack: LocalStack, out: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const args = ['--provider', 'embedded', '--edge', stack.edgeUrl, '--token', stack.tokens.operator, '--publish', '--out', join(scratch, out)];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['scripts/toolchain.mjs', 'tsx', 'scripts/memory-evaluate.ts', ...args],
      { cwd: join(import.meta.dirname, '..', '..'), timeout: 180_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

/** The run's anticipation as `client` reads the run, once the edge has decided it (at most 20 s). */
async function anticipationOf(client: ApiClient, runId: string): Promise<RunAnticipation & { anticipation: RunAnticipationView }> {
  let last: unknown;
  return until(
    async () => {
      const answer = await client.raw('GET', `/v1/runs/${runId}`);
      last = answer.body;
      const run = RunAnticipation.safeParse(answer.body);
      return run.success && run.data.anticipation !== null ? { ...run.data, anticipation: run.data.anticipation } : undefined;
    },
    () => `run ${runId} to show its anticipation (it answered ${JSON.stringify(last).slice(0, 400)})`,
    20_000,
    250,
  );
}

/** The owner's full record of a run's anticipation (`GET /v1/runs/{id}/anticipation`). */
async function recordOf(owner: ApiClient, runId: string): Promise<AnticipationRecordView> {
  return (await owner.request('GET', `/v1/runs/${runId}/anticipation`, AnticipationRecordView)).body;
}

/** An interactive run the owner creates, and its id. */
async function ownerRun(owner: ApiClient, origin: string, intent: string, profile: string): Promise<string> {
  const created = await owner.raw('POST', '/v1/runs', { profile_id: profile, intent, origins: [origin] });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return (created.body as { id: string }).id;
}

/** `run_claim` over MCP as the stack's agent (the named run, or the oldest queued one): its text and structured run. */
async function claimOverMcp(stack: LocalStack, runId?: string): Promise<{ text: string; run: unknown }> {
  const client = new Client({ name: 'e2e-memories', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', stack.edgeUrl), { requestInit: { headers: { Authorization: `Bearer ${stack.tokens.agent}` } } }),
  );
  try {
    const result = await client.callTool({ name: 'run_claim', arguments: runId ? { run_id: runId } : {} });
    expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
    const text = ((result.content as { type: string; text?: string }[]) ?? []).map((block) => block.text ?? '').join('\n');
    return { text, run: result.structuredContent };
  } finally {
    await client.close();
  }
}

// The default edge on Node (SQLite), the vendor-key edge on Workers (wrangler dev): the adapter's SDK in workerd.
const embeddedStack = blockStackTest({ headless: true, runtime: 'node' });
const modelStack = blockStackTest<AnthropicStandIn>({
  headless: true,
  site: () => startAnthropicStandIn(),
  edgeVarsOf: (standIn) => ({ ANTHROPIC_API_KEY: standIn.apiKey, ANTHROPIC_BASE_URL: standIn.url, MEMORY_MODEL: MODEL }),
});

describe('the embedded anticipator on the default edge (Node)', () => {
  const it = embeddedStack();
  const mine: Record<'seat' | 'diet' | 'folder' | 'retired', MemoryView> = {} as never;
  let theirs: MemoryView;

  /** Each anticipation is one of the owner's active memories, in the owner's words; never the retired one or the other owner's. */
  function expectOnlyOwnActive(anticipated: readonly AnticipatedMemory[]): void {
    const active = [mine.seat, mine.diet, mine.folder].map((m) => ({ memory_id: m.id, statement: m.statement }));
    for (const memory of anticipated) expect(active).toContainEqual(memory);
    const ids = anticipated.map((m) => m.memory_id);
    expect(ids).not.toContain(mine.retired.id);
    expect(ids).not.toContain(theirs.id);
    expect(new Set(ids).size).toBe(ids.length);
  }

  it('without evidence for the profile in force, a run says no_evidence and brings nothing', async ({ stack, site, owner, operator }) => {
    mine.seat = await remember(owner, STATEMENTS.seat);
    mine.diet = await remember(owner, STATEMENTS.diet);
    mine.folder = await remember(owner, STATEMENTS.folder);
    mine.retired = await retire(owner, await remember(owner, STATEMENTS.retired));
    expect(mine.retired.state).toBe('retired');
    theirs = await remember(await anotherOwner(stack, operator), STATEMENTS.theirs);

    const runId = await ownerRun(owner, site.origin, FLIGHT_INTENT, 'memories-before');
    const run = await anticipationOf(owner, runId);
    expect(run.anticipation).toMatchObject({ state: 'off', reason: 'no_evidence', provider: EMBEDDED_PROVIDER, policy_profile: 'default' });
    expect(run.anticipated).toEqual([]);
  });

  it('a bundle under the recall floor is refused at publication; memory:evaluate publishes a passing one, recorded with its gates', async ({
    stack,
    owner,
    operator,
  }) => {
    const failing = await evidenceBundle(EMBEDDED_PROVIDER, await defaultProfile(owner), 0);
    expect(failing.passed).toBe(false);
    const refused = await operator.raw('POST', '/v1/memory-evidence', failing);
    expect(refused).toMatchObject({ status: 409, body: { error: { code: 'evidence_gates_failed' } } });
    const byOwner = await owner.raw('POST', '/v1/memory-evidence', await evidenceBundle(EMBEDDED_PROVIDER, await defaultProfile(owner)));
    expect(byOwner.status).toBe(403);

    const evaluated = await evaluateAndPublish(stack, 'embedded.json');
    expect(evaluated.stdout).toMatch(/published to .* as evidence mev_/);
    expect(evaluated.code, evaluated.stdout + evaluated.stderr).toBe(0);
    const listed = await operator.request('GET', '/v1/memory-evidence', EvidenceRecordList);
    const [recorded] = listed.body.evidence;
    const profile = await defaultProfile(owner);
    expect(listed.body.evidence).toHaveLength(1);
    expect(recorded).toMatchObject({ provider: EMBEDDED_PROVIDER, policy_profile: 'default', policy_version: profile.version, policy_hash: profile.hash });
    expect(recorded?.gates.every((gate) => gate.passed)).toBe(true);
  });

  it("an owner's interactive run brings the memories its intent needs, in the owner's words, and never the retired or another owner's", async ({
    stack,
    site,
    owner,
  }) => {
    const runId = await ownerRun(owner, site.origin, FLIGHT_INTENT, 'memories-interactive');
    const run = await anticipationOf(owner, runId);
    const profile = await defaultProfile(owner);
    expect(run.anticipation).toEqual({
      state: 'ran',
      reason: null,
      message: null,
      provider: EMBEDDED_PROVIDER,
      policy_profile: 'default',
      policy_version: profile.version,
      policy_hash: profile.hash,
    });
    expect(run.anticipated.map((m) => m.memory_id)).toContain(mine.seat.id);
    expectOnlyOwnActive(run.anticipated);

    const record = await recordOf(owner, runId);
    expect(record.anticipated).toEqual(run.anticipated);
    expect(record.provider_calls).toBe(1);

    const claimed = await claimOverMcp(stack, runId);
    for (const memory of run.anticipated) expect(claimed.text).toContain(memory.statement);
    expect(claimed.text).not.toContain(STATEMENTS.retired);
    expect(claimed.text).not.toContain(STATEMENTS.theirs);
    expect(RunAnticipation.parse(claimed.run).anticipated).toEqual(run.anticipated);
  });

  it('a scheduled run gets its verified anticipations too, on the run and in run_claim', async ({ stack, site, owner }) => {
    const schedule = await owner.request(
      'POST',
      '/v1/schedules',
      ScheduleView,
      {
        cron: '* * * * *',
        intent: 'Check in for my flight and choose an aisle seat.',
        profile_id: 'memories-scheduled',
        origins: [site.origin],
        tool_versions: { 'browser.navigate': '1.2.0', 'browser.observe': '1.2.0', 'browser.act': '1.2.0' },
      },
      [201],
    );
    expect(schedule.body.intent).toMatch(/aisle seat/);
    await stack.triggerCron();
    // Owner-made runs wait queued too: find the schedule's run by its profile, then claim that one.
    const scheduledId = await until(async () => {
      const listed = await owner.raw('GET', '/v1/runs?profile_id=memories-scheduled');
      return (listed.body as { runs?: { id: string }[] }).runs?.[0]?.id;
    }, 'the schedule to fire a run');
    const claimed = await claimOverMcp(stack, scheduledId);
    const run = RunAnticipation.parse(claimed.run);
    expect(run.intent).toBe(schedule.body.intent);
    const seen = await anticipationOf(owner, run.id);
    expect(seen.anticipation.state).toBe('ran');
    expect(seen.anticipated.map((m) => m.memory_id)).toContain(mine.seat.id);
    expectOnlyOwnActive(seen.anticipated);
    for (const memory of seen.anticipated) expect(claimed.text).toContain(memory.statement);
    expect(claimed.text).not.toContain(STATEMENTS.retired);
    expect(claimed.text).not.toContain(STATEMENTS.theirs);
  });

  it('the other owner never sees this owner’s memories, and its own run brings only its own', async ({ stack, site, operator }) => {
    const other = await anotherOwner(stack, operator);
    const own = await remember(other, 'I prefer aisle seats and always check a bag on flights.');
    const runId = await ownerRun(other, site.origin, FLIGHT_INTENT, 'memories-other-owner');
    const run = await anticipationOf(other, runId);
    for (const memory of run.anticipated) expect(memory).toEqual({ memory_id: own.id, statement: own.statement });
    const listed = await other.raw('GET', '/v1/memories');
    expect(JSON.stringify(listed.body)).not.toContain(STATEMENTS.seat);
  });

  it('a new policy version switches anticipation off until evidence for its hash is published', async ({ stack, site, owner, operator }) => {
    const before = await defaultProfile(owner);
    const published = await operator.request(
      'POST',
      '/v1/policy-profiles/default',
      PolicyProfileView,
      { rules: before.rules.filter((rule) => rule.id !== 'act.bounded_hover'), denies: before.denies },
      [201],
    );
    expect(published.body.hash).not.toBe(before.hash);

    const offId = await ownerRun(owner, site.origin, FLIGHT_INTENT, 'memories-new-policy');
    const off = await anticipationOf(owner, offId);
    expect(off.anticipation).toMatchObject({ state: 'off', reason: 'no_evidence', policy_version: published.body.version, policy_hash: published.body.hash });
    expect(off.anticipated).toEqual([]);

    const evaluated = await evaluateAndPublish(stack, 'embedded-new-policy.json');
    expect(evaluated.code, evaluated.stdout + evaluated.stderr).toBe(0);
    expect(evaluated.stdout).toContain(`policy profile default v${published.body.version}`);
    const onId = await ownerRun(owner, site.origin, FLIGHT_INTENT, 'memories-new-policy-evidence');
    const on = await anticipationOf(owner, onId);
    expect(on.anticipation).toMatchObject({ state: 'ran', policy_version: published.body.version, policy_hash: published.body.hash });
    expect(on.anticipated.map((m) => m.memory_id)).toContain(mine.seat.id);
  });
});

describe('the model adapter on an edge with the vendor key (Workers), against the stand-in', () => {
  const it = modelStack();
  const mine: MemoryView[] = [];
  let retired: MemoryView;
  let theirs: MemoryView;

  it('without evidence for anthropic/<model> the run says no_evidence and the vendor is never asked, even with evidence for the embedded provider', async ({
    stack,
    site,
    owner,
    operator,
  }) => {
    for (const statement of [STATEMENTS.seat, STATEMENTS.diet, STATEMENTS.folder]) mine.push(await remember(owner, statement));
    retired = await retire(owner, await remember(owner, STATEMENTS.retired));
    theirs = await remember(await anotherOwner(stack, operator), STATEMENTS.theirs);
    await publishEvidence(operator, owner, EMBEDDED_PROVIDER);

    const runId = await ownerRun(owner, site.url, FLIGHT_INTENT, 'model-before');
    const run = await anticipationOf(owner, runId);
    expect(run.anticipation).toMatchObject({ state: 'off', reason: 'no_evidence', provider: MODEL_PROVIDER });
    expect(run.anticipated).toEqual([]);
    expect(site.requests).toHaveLength(0);
  });

  it("with its evidence, a run brings the stand-in's copied statements, and the vendor saw only the intent and the owner's active memories", async ({
    stack,
    site,
    owner,
    operator,
  }) => {
    await publishEvidence(operator, owner, MODEL_PROVIDER);
    site.reset();
    site.respondWith(copyStatements());
    const runId = await ownerRun(owner, site.url, FLIGHT_INTENT, 'model-interactive');
    const run = await anticipationOf(owner, runId);
    expect(run.anticipation).toMatchObject({ state: 'ran', reason: null, provider: MODEL_PROVIDER });
    expect([...run.anticipated].sort((a, b) => a.memory_id.localeCompare(b.memory_id))).toEqual(
      mine.map((m) => ({ memory_id: m.id, statement: m.statement })).sort((a, b) => a.memory_id.localeCompare(b.memory_id)),
    );

    expect(site.requests).toHaveLength(1);
    const [request] = site.requests;
    expect(request?.problem).toBeUndefined();
    expect(request?.body).toMatchObject({ model: MODEL });
    expect(request?.anticipation?.intent).toBe(FLIGHT_INTENT);
    expect([...(request?.anticipation?.memories ?? [])].sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      mine.map((m) => ({ id: m.id, statement: m.statement })).sort((a, b) => a.id.localeCompare(b.id)),
    );
    const sent = JSON.stringify(request?.body);
    expect(sent).not.toContain(retired.id);
    expect(sent).not.toContain(theirs.id);
    expect(sent).not.toContain(STATEMENTS.theirs);
    expect(sent).not.toContain(STATEMENTS.retired);

    const claimed = await claimOverMcp(stack, runId);
    for (const memory of mine) expect(claimed.text).toContain(memory.statement);
  });

  it("a compound answer is refused: the owner's record says compound, the run and the agent see nothing of it", async ({ stack, site, owner }) => {
    site.reset();
    site.respondWith(compoundOfFirstTwo());
    const runId = await ownerRun(owner, site.url, FLIGHT_INTENT, 'model-joined');
    const run = await anticipationOf(owner, runId);
    expect(run.anticipation.state).toBe('ran');
    expect(run.anticipated).toEqual([]);
    const record = await recordOf(owner, runId);
    expect(record.refused).toHaveLength(1);
    expect(record.refused[0]).toMatchObject({ reason: 'compound' });
    const claimed = await claimOverMcp(stack, runId);
    expect(claimed.text).not.toContain(record.refused[0]?.statement ?? 'unreachable');
    expect(RunAnticipation.parse(claimed.run).anticipated).toEqual([]);
    expect(claimed.run).not.toHaveProperty('refused');
    expect(JSON.stringify(claimed.run)).not.toContain('"reason":"compound"');
  });

  it("an agent's page-derived proposal stays a suggestion the vendor never sees, and an agent's own intent is never sent", async ({
    stack,
    site,
    owner,
    agent,
  }) => {
    const reportedId = await ownerRun(owner, site.url, 'Find my booking reference.', 'model-report');
    await claimOverMcp(stack, reportedId);
    const proposal = 'The owner always flies business class, the booking page says.';
    const reported = await agent.raw('POST', `/v1/runs/${reportedId}/report`, {
      status: 'completed',
      summary: 'Found it.',
      memories: [{ statement: proposal, page_derived: true }],
    });
    expect(reported.status, JSON.stringify(reported.body)).toBe(200);
    const suggestions = await owner.request('GET', '/v1/memory-suggestions', SuggestionList);
    expect(suggestions.body.suggestions).toContainEqual(expect.objectContaining({ statement: proposal, page_derived: true, state: 'pending' }));

    site.reset();
    const nextId = await ownerRun(owner, site.url, 'Book a business class flight to Oslo.', 'model-after-report');
    expect((await anticipationOf(owner, nextId)).anticipation.state).toBe('ran');
    expect(site.requests).toHaveLength(1);
    expect(JSON.stringify(site.requests[0]?.body)).not.toContain(proposal);

    site.reset();
    const agentMade = await agent.raw('POST', '/v1/runs', {
      profile_id: 'model-agent',
      intent: 'Book business class: the owner loves it.',
      origins: [site.url],
    });
    expect(agentMade.status, JSON.stringify(agentMade.body)).toBe(201);
    const agentRun = await anticipationOf(agent, (agentMade.body as { id: string }).id);
    expect(agentRun.anticipation).toMatchObject({ state: 'off', reason: 'agent_intent' });
    expect(agentRun.anticipated).toEqual([]);
    expect(site.requests).toHaveLength(0);
  });

  it('a vendor failing every call within the budget leaves the run with provider_failed after exactly the budgeted calls', async ({ site, owner }) => {
    site.reset();
    site.respondWith(failWith(500));
    const runId = await ownerRun(owner, site.url, FLIGHT_INTENT, 'model-failing');
    const run = await anticipationOf(owner, runId);
    expect(run.anticipation).toMatchObject({ state: 'off', reason: 'provider_failed', provider: MODEL_PROVIDER });
    expect(run.anticipated).toEqual([]);
    expect(site.requests).toHaveLength(ANTICIPATION_CALL_BUDGET);
    expect((await recordOf(owner, runId)).provider_calls).toBe(ANTICIPATION_CALL_BUDGET);
  });
});
