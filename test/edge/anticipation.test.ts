import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { fireDueSchedules } from '../../edge/schedules/schedules.ts';
import type { RunList, RunView, ScheduleView } from '../../shared/api.ts';
import type { ErrorBody } from '../../shared/errors.ts';
import type { AnticipationRecordView } from '../../shared/memories.ts';
import type { EvidenceRecordList, EvidenceRecordView } from '../../shared/memory-evidence.ts';
import type { PolicyProfileView } from '../../shared/policy.ts';
import { anticipationApp, copyingProvider, evidenceBundle, seedMemory, type TestProvider, testProvider } from './support/anticipation-app.ts';
import { partiesForEachTest, row } from './support/edge-client.ts';
import { SCHEDULE, SEVEN_AM } from './support/run-fixture.ts';

// Anticipation at a run's start (issue 34, ADR-0168, DESIGN.md section 19): runs under a policy
// profile version with a passing evidence bundle for its hash and the configured provider get the
// owner's own statements the verifier accepted; refused predictions are the owner's record only.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8123';
const AISLE = 'I prefer aisle seats on flights.';
const MEALS = 'I am vegetarian, so flight meals must be vegetarian.';
const PASSPORT = 'My passport number is kept in the travel folder.';

let providers = 0;
/** A provider id no other test of the file published evidence for. */
const providerId = (kind: string) => `test/${kind}-${++providers}`;

/** The app over `provider`, with a passing bundle for it under the default profile in force published by the operator. */
async function anticipating(provider: TestProvider) {
  const app = anticipationApp(provider);
  await publishFor(app, provider.id);
  return app;
}

async function publishFor(app: ReturnType<typeof anticipationApp>, provider: string) {
  const policy = await app.request<PolicyProfileView>('GET', '/v1/policy-profiles/default', parties.operator.token);
  const published = await app.request<EvidenceRecordView>('POST', '/v1/memory-evidence', parties.operator.token, await evidenceBundle(provider, policy.body));
  expect(published.status).toBe(201);
  return published.body;
}

function createRun(app: ReturnType<typeof anticipationApp>, token: string, intent: string) {
  return app.request<RunView>('POST', '/v1/runs', token, { profile_id: 'memories', intent, origins: [ORIGIN] });
}

describe('anticipation at a run’s start', () => {
  it("an owner's interactive run shows the verified statements on create, read, list and the owner's record; the provider saw only the owner's active memories", async () => {
    const aisle = await seedMemory(parties.owner.id, AISLE);
    const meals = await seedMemory(parties.owner.id, MEALS);
    await seedMemory(parties.owner.id, PASSPORT);
    const retired = await seedMemory(parties.owner.id, 'I prefer window seats on flights.', 'retired');
    const theirs = await seedMemory(parties.strangerOwner.id, 'I prefer the front row seats on flights.');
    const provider = copyingProvider(providerId('copier'));
    const app = await anticipating(provider);

    const created = await createRun(app, parties.owner.token, 'Book flights to Lisbon with vegetarian meals');
    expect(created.status).toBe(201);
    const expected = [
      { memory_id: aisle, statement: AISLE },
      { memory_id: meals, statement: MEALS },
    ];
    expect(created.body.anticipated).toEqual(expected);
    expect(created.body.anticipation).toMatchObject({ state: 'ran', reason: null, message: null, provider: provider.id, policy_profile: 'default' });
    expect(provider.requests).toHaveLength(1);
    const given = provider.requests[0]!.memories.map((m) => m.id);
    expect(given).toHaveLength(3);
    expect(given).not.toContain(retired);
    expect(given).not.toContain(theirs);
    expect(provider.requests[0]!.intent).toBe('Book flights to Lisbon with vegetarian meals');

    const read = await app.request<RunView>('GET', `/v1/runs/${created.body.id}`, parties.agent.token);
    expect(read.body.anticipated).toEqual(expected);
    const listed = await app.request<RunList>('GET', '/v1/runs', parties.owner.token);
    expect(listed.body.runs.find((run) => run.id === created.body.id)?.anticipated).toEqual(expected);
    const record = await app.request<AnticipationRecordView>('GET', `/v1/runs/${created.body.id}/anticipation`, parties.owner.token);
    expect(record.body).toMatchObject({ run_id: created.body.id, anticipated: expected, refused: [], provider_calls: 1 });
    const byAgent = await app.request<ErrorBody>('GET', `/v1/runs/${created.body.id}/anticipation`, parties.agent.token);
    expect([byAgent.status, byAgent.body.error.code]).toEqual([403, 'forbidden']);
    const byStranger = await app.request<ErrorBody>('GET', `/v1/runs/${created.body.id}/anticipation`, parties.strangerOwner.token);
    expect([byStranger.status, byStranger.body.error.code]).toEqual([404, 'not_found']);

    const claimed = await app.request<{ result: { content: { text: string }[]; structuredContent: RunView } }>('POST', '/mcp', parties.agent.token, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'run_claim', arguments: { run_id: created.body.id } },
    });
    expect(claimed.body.result.content[0]!.text).toContain(`The owner's own statements (from their memories):\n- ${AISLE}\n- ${MEALS}`);
    expect(claimed.body.result.structuredContent.anticipated).toEqual(expected);
  });

  it("refuses compounds, another owner's and retired memories and unknown ids; the run and the agent see only the copies, the owner's record every refusal", async () => {
    const aisle = await seedMemory(parties.owner.id, AISLE);
    const meals = await seedMemory(parties.owner.id, MEALS);
    const retired = await seedMemory(parties.owner.id, 'I live in Porto.', 'retired');
    const theirs = await seedMemory(parties.strangerOwner.id, 'The stranger prefers window seats.');
    const provider = testProvider(providerId('compounder'), () => [
      { memory_id: aisle, statement: `${AISLE} ${MEALS}` },
      { memory_id: meals, statement: MEALS },
      { memory_id: theirs, statement: 'The stranger prefers window seats.' },
      { memory_id: retired, statement: 'I live in Porto.' },
      { memory_id: 'mem_nobody', statement: 'I own a yacht.' },
      { memory_id: [aisle, meals], statement: `${AISLE} ${MEALS}` },
    ]);
    const app = await anticipating(provider);

    const created = await createRun(app, parties.owner.token, 'Book a flight');
    expect(created.body.anticipated).toEqual([{ memory_id: meals, statement: MEALS }]);
    expect(JSON.stringify(created.body)).not.toContain('stranger');
    const record = await app.request<AnticipationRecordView>('GET', `/v1/runs/${created.body.id}/anticipation`, parties.owner.token);
    expect(record.body.refused.map((r) => [r.memory_id, r.reason])).toEqual([
      [aisle, 'compound'],
      [theirs, 'other_owner'],
      [retired, 'retired_memory'],
      ['mem_nobody', 'unknown_memory'],
      [null, 'schema'],
    ]);
    // Recorded in the provider's order, verified and refused alike.
    const recorded = await env.DB.prepare('SELECT memory_id, verdict FROM anticipation_predictions WHERE run_id = ? ORDER BY position')
      .bind(created.body.id)
      .all<{ memory_id: string | null; verdict: string }>();
    expect(recorded.results.map((r) => [r.memory_id, r.verdict])).toEqual([
      [aisle, 'refused'],
      [meals, 'verified'],
      [theirs, 'refused'],
      [retired, 'refused'],
      ['mem_nobody', 'refused'],
      [null, 'refused'],
    ]);
    const claimed = await app.request<{ result: { content: { text: string }[] } }>('POST', '/mcp', parties.agent.token, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'run_claim', arguments: { run_id: created.body.id } },
    });
    const text = claimed.body.result.content[0]!.text;
    expect(text).toContain(`- ${MEALS}`);
    for (const refused of ['stranger', 'Porto', 'yacht', AISLE]) expect(text).not.toContain(refused);
  });

  it("a scheduled run gets its verified anticipations from the schedule's intent, the owner's words", async () => {
    const aisle = await seedMemory(parties.owner.id, 'For the morning briefing, summarise the feed in three bullet points.');
    await seedMemory(parties.owner.id, AISLE);
    const provider = copyingProvider(providerId('scheduled'));
    const app = await anticipating(provider);
    const schedule = await app.request<ScheduleView>('POST', '/v1/schedules', parties.owner.token, SCHEDULE);
    expect(schedule.status).toBe(201);

    const [fired] = (await fireDueSchedules(app.ports(), SEVEN_AM)).filter((run) => run.scheduleId === schedule.body.id);
    expect(fired).toBeDefined();
    const read = await app.request<RunView>('GET', `/v1/runs/${fired!.id}`, parties.owner.token);
    expect(read.body.anticipation).toMatchObject({ state: 'ran', provider: provider.id });
    expect(read.body.anticipated).toEqual([{ memory_id: aisle, statement: 'For the morning briefing, summarise the feed in three bullet points.' }]);
    expect(provider.requests.map((r) => r.intent)).toEqual([SCHEDULE.intent]);
  });

  it('a run an agent creates is off with agent_intent, and the provider is never asked', async () => {
    await seedMemory(parties.owner.id, AISLE);
    const provider = copyingProvider(providerId('agent-intent'));
    const app = await anticipating(provider);
    const created = await createRun(app, parties.agent.token, 'Book flights; the owner prefers aisle seats on flights');
    expect(created.body.anticipated).toEqual([]);
    expect(created.body.anticipation).toMatchObject({ state: 'off', reason: 'agent_intent' });
    expect(provider.requests).toEqual([]);
  });

  it('a run an agent creates under a policy version without evidence says agent_intent, the reason that holds whatever evidence there is', async () => {
    await seedMemory(parties.owner.id, AISLE);
    const provider = copyingProvider(providerId('agent-no-evidence'));
    const created = await createRun(anticipationApp(provider), parties.agent.token, 'Book flights');
    expect(created.body.anticipation).toMatchObject({ state: 'off', reason: 'agent_intent' });
    expect(provider.requests).toEqual([]);
  });

  it('an owner without active memories is off with no_memories; a failing provider is off with provider_failed after the call budget', async () => {
    await seedMemory(parties.owner.id, AISLE, 'retired');
    const quiet = copyingProvider(providerId('quiet'));
    const none = await createRun(await anticipating(quiet), parties.owner.token, 'Book flights');
    expect(none.body.anticipation).toMatchObject({ state: 'off', reason: 'no_memories' });
    expect(quiet.requests).toEqual([]);

    await seedMemory(parties.owner.id, MEALS);
    const failing = testProvider(providerId('failing'), () => {
      throw new Error('the vendor is overloaded');
    });
    const failed = await createRun(await anticipating(failing), parties.owner.token, 'Book flights');
    expect(failed.status).toBe(201);
    expect(failed.body.anticipation).toMatchObject({ state: 'off', reason: 'provider_failed' });
    expect(failing.requests).toHaveLength(2);
    expect(await row('SELECT provider_calls FROM run_anticipations WHERE run_id = ?', failed.body.id)).toEqual({ provider_calls: 2 });
  });

  it('a provider that never answers is cut off at the call timeout, within the budget, and the run is created all the same', async () => {
    await seedMemory(parties.owner.id, AISLE);
    let calls = 0;
    const silent: TestProvider = {
      id: providerId('silent'),
      requests: [],
      anticipate() {
        calls += 1;
        return new Promise(() => {});
      },
    };
    // A clock whose waits end at once: each call's timeout elapses immediately.
    const app = anticipationApp(silent, { clock: { now: () => Date.now(), sleep: () => Promise.resolve() } });
    await publishFor(app, silent.id);
    const created = await createRun(app, parties.owner.token, 'Book flights');
    expect(created.status).toBe(201);
    expect(created.body.anticipation).toMatchObject({ state: 'off', reason: 'provider_failed' });
    expect(calls).toBe(2);
  });
});

describe('the evidence gate', () => {
  it('without evidence for the provider a run is off with no_evidence and a sentence naming the profile, version and hash', async () => {
    await seedMemory(parties.owner.id, AISLE);
    const provider = copyingProvider(providerId('unproven'));
    const app = anticipationApp(provider);
    const policy = await app.request<PolicyProfileView>('GET', '/v1/policy-profiles/default', parties.owner.token);
    const created = await createRun(app, parties.owner.token, 'Book flights');
    expect(created.body.anticipated).toEqual([]);
    expect(created.body.anticipation).toMatchObject({
      state: 'off',
      reason: 'no_evidence',
      policy_version: policy.body.version,
      policy_hash: policy.body.hash,
    });
    expect(created.body.anticipation?.message).toContain(`policy profile default version ${policy.body.version} (hash ${policy.body.hash.slice(0, 12)})`);
    expect(created.body.anticipation?.message).toContain('POST /v1/memory-evidence');
    expect(provider.requests).toEqual([]);
  });

  it('a new policy version switches anticipation off for later runs until a bundle for its hash is published', async () => {
    const aisle = await seedMemory(parties.owner.id, AISLE);
    const provider = copyingProvider(providerId('versions'));
    const app = await anticipating(provider);
    const before = await createRun(app, parties.owner.token, 'Book flights');
    expect(before.body.anticipated).toEqual([{ memory_id: aisle, statement: AISLE }]);

    const current = await app.request<PolicyProfileView>('GET', '/v1/policy-profiles/default', parties.operator.token);
    const next = await app.request<PolicyProfileView>('POST', '/v1/policy-profiles/default', parties.operator.token, {
      rules: current.body.rules.filter((rule) => rule.id !== 'act.bounded_hover'),
      denies: [],
    });
    expect(next.status).toBe(201);
    const after = await createRun(app, parties.owner.token, 'Book flights');
    expect(after.body.anticipated).toEqual([]);
    expect(after.body.anticipation).toMatchObject({ state: 'off', reason: 'no_evidence', policy_version: next.body.version, policy_hash: next.body.hash });
    expect(after.body.anticipation?.message).toContain(`version ${next.body.version} (hash ${next.body.hash.slice(0, 12)})`);
    // The earlier run keeps what it was decided under.
    const earlier = await app.request<RunView>('GET', `/v1/runs/${before.body.id}`, parties.owner.token);
    expect(earlier.body.anticipation).toMatchObject({ state: 'ran', policy_hash: current.body.hash });

    await publishFor(app, provider.id);
    const fresh = await createRun(app, parties.owner.token, 'Book flights');
    expect(fresh.body.anticipation).toMatchObject({ state: 'ran', policy_version: next.body.version });
    expect(fresh.body.anticipated).toEqual([{ memory_id: aisle, statement: AISLE }]);
  });

  it('a bundle with holdout recall under the floor is refused at publication, whatever gates it claims, and nothing is recorded', async () => {
    const app = anticipationApp(copyingProvider(providerId('weak')));
    const policy = await app.request<PolicyProfileView>('GET', '/v1/policy-profiles/default', parties.operator.token);
    const weak = await evidenceBundle('test/weak', policy.body, 0.9);
    const before = await app.request<EvidenceRecordList>('GET', '/v1/memory-evidence', parties.operator.token);
    const refused = await app.request<ErrorBody>('POST', '/v1/memory-evidence', parties.operator.token, weak);
    expect([refused.status, refused.body.error.code]).toEqual([409, 'evidence_gates_failed']);
    expect(refused.body.error.message).toMatch(/holdout_direct_recall 0(\.\d+)? under the threshold 0\.95/);
    const lying = { ...weak, gates: weak.gates.map((gate) => ({ ...gate, passed: true })), passed: true };
    const claimed = await app.request<ErrorBody>('POST', '/v1/memory-evidence', parties.operator.token, lying);
    expect([claimed.status, claimed.body.error.code]).toEqual([409, 'evidence_gates_failed']);
    const after = await app.request<EvidenceRecordList>('GET', '/v1/memory-evidence', parties.operator.token);
    expect(after.body.evidence).toEqual(before.body.evidence);
  });

  it('a bundle over other corpora, or for a policy version or hash the edge does not know, is refused as evidence_mismatch', async () => {
    const app = anticipationApp(copyingProvider(providerId('mismatch')));
    const policy = await app.request<PolicyProfileView>('GET', '/v1/policy-profiles/default', parties.operator.token);
    const good = await evidenceBundle('test/mismatch', policy.body);
    const cases = [
      { ...good, corpora: { ...good.corpora, holdout: { ...good.corpora.holdout, hash: 'f'.repeat(64) } } },
      { ...good, policy_profile: { ...good.policy_profile, version: policy.body.version + 10 } },
      { ...good, policy_profile: { ...good.policy_profile, hash: 'e'.repeat(64) } },
    ];
    for (const bundle of cases) {
      const refused = await app.request<ErrorBody>('POST', '/v1/memory-evidence', parties.operator.token, bundle);
      expect([refused.status, refused.body.error.code]).toEqual([409, 'evidence_mismatch']);
    }
    // Counts that are not the frozen corpus's: a bundle cannot pass by scoring fewer (or other) needs.
    const holdoutNeeded = good.repeats[0]!.holdout.needed;
    const recount = await app.request<ErrorBody>('POST', '/v1/memory-evidence', parties.operator.token, {
      ...good,
      repeats: good.repeats.map((repeat) => ({ ...repeat, holdout: { ...repeat.holdout, needed: holdoutNeeded + 1, directly_recalled: holdoutNeeded + 1 } })),
    });
    expect([recount.status, recount.body.error.code]).toEqual([409, 'evidence_mismatch']);
    expect((await app.request<EvidenceRecordList>('GET', '/v1/memory-evidence', parties.operator.token)).body.evidence.map((e) => e.provider)).not.toContain(
      'test/mismatch',
    );
  });

  it('only an operator publishes or lists evidence; a published record shows the gates as the edge computed them', async () => {
    const app = anticipationApp(copyingProvider(providerId('operator')));
    const policy = await app.request<PolicyProfileView>('GET', '/v1/policy-profiles/default', parties.operator.token);
    const bundle = await evidenceBundle('test/operator-only', policy.body);
    for (const token of [parties.owner.token, parties.agent.token]) {
      const refused = await app.request<ErrorBody>('POST', '/v1/memory-evidence', token, bundle);
      expect([refused.status, refused.body.error.code]).toEqual([403, 'forbidden']);
      const listed = await app.request<ErrorBody>('GET', '/v1/memory-evidence', token);
      expect([listed.status, listed.body.error.code]).toEqual([403, 'forbidden']);
    }
    const published = await app.request<EvidenceRecordView>('POST', '/v1/memory-evidence', parties.operator.token, { ...bundle, gates: [], passed: false });
    expect(published.status).toBe(201);
    expect(published.body).toMatchObject({
      provider: 'test/operator-only',
      policy_hash: policy.body.hash,
      published_by: parties.operator.id,
      gates: bundle.gates,
    });
    const listed = await app.request<EvidenceRecordList>('GET', '/v1/memory-evidence', parties.operator.token);
    expect(listed.body.evidence.find((record) => record.id === published.body.id)).toEqual(published.body);
  });
});
