import { env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Principal } from '../../edge/auth/principal.ts';
import { HostCallError } from '../../edge/host/host-session.ts';
import { canonicalHash } from '../../edge/policy/canonical-hash.ts';
import type { Ports } from '../../edge/ports.ts';
import { driveRecipeRun } from '../../edge/recipes/drive.ts';
import { driveDueRecipeRuns } from '../../edge/recipes/scheduling.ts';
import { createRun, loadRun } from '../../edge/runs/lifecycle.ts';
import type { RunView } from '../../shared/api.ts';
import { MAX_RECIPE_CALLS, MAX_RECIPE_DURATION_MS, normalizedIntent, type RecipeBody, type RecipeRunView, type RecipeView } from '../../shared/recipes.ts';
import { until } from '../support/until.ts';
import { call, callError, errorBody, partiesForEachTest, row, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';

// The recipe catalog, selection and the recipe runner (ADR-0164 part 5) over the real D1 in
// workerd. The host is a stand-in that serves one page whose controls the test chooses;
// the report/account fixture in real Chromium is test/e2e/recipes.test.ts.

const parties = partiesForEachTest();
// The catalog is the operator's, one for every owner, and the file's tests share one D1: each test
// gets its own site origin and recipe ids, so no test's recipe matches another's run.
let serial = 0;
let ORIGIN = '';
beforeEach(() => {
  serial += 1;
  ORIGIN = `http://127.0.0.1:${20_000 + serial}`;
});
/** A recipe id of this test. */
const rid = (name: string) => `${name}-${serial}`;

/** A one-page site: a "Go" button (twice when `duplicated`) and the text "Page". */
function page(revision: number, options: { duplicated?: boolean; done?: boolean } = {}) {
  const lines = ['- main [ref=e1]:', '  - button "Go" [ref=e2]'];
  if (options.duplicated) lines.push('  - button "Go" [ref=e3]');
  lines.push(`  - paragraph [ref=e4]: ${options.done ? 'Done' : 'Page'}`);
  return { ...hostPage(`${ORIGIN}/start`, revision), snapshot: lines.join('\n') };
}

/** A recipe of `count` identical steps on the one-page site: click "Go", proven by `proof` (default the text "Page"). */
function recipeOf(count: number, change: Partial<RecipeBody> = {}, proof = 'Page'): RecipeBody {
  return {
    enabled: true,
    reviewed_fixture: 'test/edge/recipes.test.ts',
    origin: ORIGIN,
    phrases: ['Press go'],
    start_path: '/start',
    steps: Array.from({ length: count }, (_, index) => ({
      title: `Press go ${index + 1}`,
      expect: { kind: 'control' as const, role: 'button' as const, name: 'Go' },
      target: { role: 'button' as const, name: 'Go' },
      action: { kind: 'click' as const },
      postcondition: { success: { kind: 'text' as const, text: proof }, timeout_ms: 0 },
    })),
    ...change,
  };
}

async function publish(id: string, body: unknown) {
  return call<RecipeView>('POST', `/v1/recipes/${id}`, { token: parties.operator.token, body });
}

const owner = (): Principal => ({ id: parties.owner.id, kind: 'owner', ownerId: parties.owner.id });

interface HostScript {
  /** What `page.act` does, by how many acts came before. */
  act?: (count: number, params: Record<string, unknown>) => unknown;
  /** What a read shows, by how many reads came before. */
  read?: (count: number) => unknown;
}

/** A stand-in host for the one-page site; the commands it got are in `calls`. */
function siteHost(script: HostScript = {}) {
  let revision = 0;
  let reads = 0;
  let acts = 0;
  return scriptedHost(async (method, params) => {
    switch (method) {
      case 'lease.acquire':
      case 'lease.renew':
        return { lease_id: 'lease_recipes00001', profile_id: String(params.profile_id ?? 'p'), generation: 1, expires_at_ms: Date.now() + 300_000 };
      case 'page.navigate':
      case 'page.observe': {
        const shown = script.read?.(reads++);
        return shown ?? page(++revision);
      }
      case 'page.act': {
        const done = script.act?.(acts++, params);
        return done ?? page(++revision);
      }
      default:
        return { released: true };
    }
  });
}

/** Ports over the stand-in with a clock the test can move (epoch ms). */
function portsWith(host: ReturnType<typeof siteHost>, clock?: { at: number }): Ports {
  const base = workerdPorts(host.connector);
  return clock ? { ...base, clock: { now: () => clock.at, sleep: base.clock.sleep } } : base;
}

/** An owner's run with the recipe's phrase, created directly (no kick: the test drives it). */
async function boundRun(ports: Ports, intent = 'Press go', fields?: Record<string, string>) {
  const run = await createRun(ports, owner(), { profile_id: 'recipes', intent, origins: [ORIGIN], deadline_ms: 3_600_000, ...(fields ? { fields } : {}) });
  expect(run.recipeId).not.toBeNull();
  return run;
}

/** Drives until the run parks or ends, at most `drives` times. */
async function driveToEnd(ports: Ports, runId: string, drives = 3): Promise<RunView['state']> {
  for (let index = 0; index < drives; index++) {
    const outcome = await driveRecipeRun(ports, runId);
    if (outcome === 'ended' || outcome === 'parked') break;
  }
  return (await loadRun(ports, owner(), runId)).state;
}

async function recipeRun(runId: string) {
  return (await call<RecipeRunView>('GET', `/v1/runs/${runId}/recipe`, { token: parties.owner.token })).body;
}

async function grantClicks(uses = 64) {
  const granted = await call('POST', '/v1/grants', {
    token: parties.owner.token,
    body: { tool: 'browser.act', actions: ['click'], origin: ORIGIN, max_uses: uses, ttl_ms: 3_600_000 },
  });
  expect(granted.status).toBe(201);
}

describe('the recipe catalog', () => {
  it('is empty at first; the operator publishes versions with a content hash; owners and operators read, nobody else writes', async () => {
    const listed = async () =>
      (await call<{ recipes: RecipeView[] }>('GET', '/v1/recipes', { token: parties.owner.token })).body.recipes.map((recipe) => recipe.id);
    // The file's first test: the catalog ships empty.
    expect(await listed()).toEqual([]);
    const first = await publish(rid('press-go'), recipeOf(1));
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ id: rid('press-go'), version: 1, in_use: true, hash: await canonicalHash(recipeOf(1)) });
    const second = await publish(rid('press-go'), recipeOf(2));
    expect(second.body.version).toBe(2);
    expect(await listed()).toEqual([rid('press-go')]);
    expect((await call<RecipeView>('GET', `/v1/recipes/${rid('press-go')}`, { token: parties.owner.token })).body).toMatchObject({
      version: 2,
      steps: recipeOf(2).steps,
    });
    for (const kind of ['owner', 'agent'] as const) {
      const refused = await callError('POST', `/v1/recipes/${rid('press-go')}`, { token: parties[kind].token, body: recipeOf(1) });
      expect(refused).toEqual({ status: 403, body: errorBody('forbidden', `this endpoint is for operator principals, not ${kind}`) });
    }
    expect(await callError('GET', '/v1/recipes', { token: parties.agent.token })).toEqual({
      status: 403,
      body: errorBody('forbidden', 'this endpoint is for operator or owner principals, not agent'),
    });
    expect(await callError('GET', '/v1/recipes/nothing-here', { token: parties.operator.token })).toEqual({
      status: 404,
      body: errorBody('not_found', 'no recipe nothing-here'),
    });
    const unreviewed = await publish(rid('unreviewed'), recipeOf(1, { reviewed_fixture: '' }));
    expect(unreviewed.body.in_use).toBe(false);
  });

  const step = recipeOf(1).steps[0]!;
  it.each([
    ['a script', { ...recipeOf(1), script: 'document.forms[0].submit()' }],
    ['a selector in a target', recipeOf(1, { steps: [{ ...step, target: { ...step.target, selector: '#go' } as never }] })],
    ['an element reference in a target', recipeOf(1, { steps: [{ ...step, target: { ...step.target, ref: 'e2' } as never }] })],
    ['a reference instead of a target', recipeOf(1, { steps: [{ ...step, target: undefined as never, reference: 'e2' } as never] })],
    ['an approval', { ...recipeOf(1), approval: { approved: true } }],
    ['a permission exemption', recipeOf(1, { steps: [{ ...step, grant_id: 'grt_x' } as never] })],
    [
      'a credential typed into a password field',
      recipeOf(1, { steps: [{ ...step, target: { role: 'textbox', name: 'Password' }, action: { kind: 'type', value: { text: 'hunter2' } } }] }),
    ],
    [
      'a field named passwd',
      recipeOf(1, { steps: [{ ...step, target: { role: 'textbox', name: 'Passwd' }, action: { kind: 'type', value: { text: 'x' } } }] }),
    ],
    ['seventeen steps', recipeOf(17)],
    ['no steps', recipeOf(0)],
    ['a phrase of punctuation only', recipeOf(1, { phrases: ['?!'] })],
    ['a phrase of invisible characters only', recipeOf(1, { phrases: ['\u200b', '\u00ad\u200d'] })],
    [
      'a fullwidth password field',
      recipeOf(1, { steps: [{ ...step, target: { role: 'textbox', name: 'Ｐａｓｓｗｏｒｄ' }, action: { kind: 'type', value: { text: 'x' } } }] }),
    ],
    [
      'a password field named with an underscore',
      recipeOf(1, { steps: [{ ...step, target: { role: 'textbox', name: 'Your_password' }, action: { kind: 'type', value: { text: 'x' } } }] }),
    ],
    [
      'a German password field',
      recipeOf(1, { steps: [{ ...step, target: { role: 'textbox', name: 'Kennwort' }, action: { kind: 'type', value: { text: 'x' } } }] }),
    ],
    ['an action kind recipes do not take', recipeOf(1, { steps: [{ ...step, action: { kind: 'navigate' } as never }] })],
    ['a value read off the page', recipeOf(1, { steps: [{ ...step, action: { kind: 'type', value: { from_page: 'e4' } } as never }] })],
    ['an origin that is a URL', recipeOf(1, { origin: `${ORIGIN}/start` })],
  ])('refuses a recipe with %s and changes nothing', async (_name, body) => {
    const refused = await callError('POST', `/v1/recipes/${rid('press-go')}`, { token: parties.operator.token, body });
    expect([refused.status, refused.body.error.code]).toEqual([400, 'invalid_request']);
    expect(await row('SELECT count(*) AS n FROM recipes WHERE id = ?', rid('press-go'))).toEqual({ n: 0 });
  });

  it('refuses an id that is not a recipe name', async () => {
    const refused = await callError('POST', '/v1/recipes/Press_Go', { token: parties.operator.token, body: recipeOf(1) });
    expect([refused.status, refused.body.error.code]).toEqual([400, 'invalid_request']);
  });
});

describe('selection', () => {
  it('folds case, whitespace and punctuation, and nothing else', () => {
    expect(normalizedIntent('  File the WEEKLY report!! ')).toBe('file the weekly report');
    expect(normalizedIntent('file—the weekly   report.')).toBe('file the weekly report');
    expect(normalizedIntent('file the monthly report')).not.toBe(normalizedIntent('file the weekly report'));
    // Invisible characters are no part of a word.
    expect(normalizedIntent('file\u200b the\u00ad weekly\u202e report')).toBe('file the weekly report');
  });

  async function created(intent: string, change: Record<string, unknown> = {}, token = parties.owner.token) {
    const answer = await call<RunView>('POST', '/v1/runs', { token, body: { profile_id: 'selection', intent, origins: [ORIGIN], ...change } });
    expect(answer.status).toBe(201);
    await call('POST', `/v1/runs/${answer.body.id}/cancel`, { token: parties.owner.token });
    return answer.body;
  }

  it("binds an owner's exact phrase on the recipe's origin, recording id, version and hash", async () => {
    const published = (await publish(rid('press-go-select'), recipeOf(1))).body;
    const run = await created('press GO.');
    expect(run.recipe).toEqual({ id: rid('press-go-select'), version: 1, hash: published.hash });
  });

  it('takes the ordinary path for an intent one word off, another origin, several origins, an agent, a disabled or unreviewed recipe, and two matches', async () => {
    await publish(rid('press-go-select'), recipeOf(1));
    expect((await created('press go now')).recipe).toBeNull();
    expect((await created('Press go', { origins: ['http://127.0.0.1:8124'] })).recipe).toBeNull();
    expect((await created('Press go', { origins: [ORIGIN, 'http://127.0.0.1:8124'] })).recipe).toBeNull();
    expect((await created('Press go', {}, parties.agent.token)).recipe).toBeNull();
    await publish(rid('press-go-select'), recipeOf(1, { enabled: false }));
    expect((await created('Press go')).recipe).toBeNull();
    await publish(rid('press-go-select'), recipeOf(1, { reviewed_fixture: ' ' }));
    expect((await created('Press go')).recipe).toBeNull();
    await publish(rid('press-go-select'), recipeOf(1));
    expect((await created('Press go')).recipe).not.toBeNull();
    const twin = await publish(rid('press-go-twin'), recipeOf(1, { phrases: ['Something else', 'press go'] }));
    // The operator is told at once that the two clash.
    expect(twin.body.clashes_with).toEqual([rid('press-go-select')]);
    expect((await created('Press go')).recipe).toBeNull();
  });

  it("needs the owner's named fields the recipe types, and only the owner's message carries fields", async () => {
    const typing = recipeOf(1, {
      steps: [{ ...recipeOf(1).steps[0]!, target: { role: 'textbox', name: 'Title' }, action: { kind: 'type', value: { field: 'title' } } }],
    });
    expect((await publish(rid('type-title'), typing)).body.fields).toEqual(['title']);
    expect((await created('Press go')).recipe).toBeNull();
    expect((await created('Press go', { fields: { title: '  ' } })).recipe).toBeNull();
    expect((await created('Press go', { fields: { title: '\u200b\u00ad' } })).recipe).toBeNull();
    // A value that makes a step's proof no valid predicate (predicate texts are at most 200 characters).
    await publish(
      rid('type-title'),
      recipeOf(1, {
        steps: [
          {
            ...recipeOf(1).steps[0]!,
            target: { role: 'textbox', name: 'Title' },
            action: { kind: 'type', value: { field: 'title' } },
            postcondition: { success: { kind: 'text', text: 'Filed {{title}}' } },
          },
        ],
      }),
    );
    expect((await created('Press go', { fields: { title: 'x'.repeat(201) } })).recipe).toBeNull();
    expect((await created('Press go', { fields: { title: 'Week 49' } })).recipe?.id).toBe(rid('type-title'));
    const byAgent = await callError('POST', '/v1/runs', {
      token: parties.agent.token,
      body: { profile_id: 'selection', intent: 'Press go', origins: [ORIGIN], fields: { title: 'x' } },
    });
    expect([byAgent.status, byAgent.body.error.code]).toEqual([400, 'invalid_request']);
  });
});

describe('the recipe runner', () => {
  it('carries out each step as one ordinary call from a fresh read; only the runner acts, and agents can neither claim nor propose on the run', async () => {
    await publish(rid('press-go'), recipeOf(2));
    await grantClicks();
    const host = siteHost();
    const ports = portsWith(host);
    const run = await boundRun(ports);
    const claim = await callError('POST', '/v1/runs/claim', { token: parties.agent.token });
    expect(claim.status).toBe(404);
    const proposed = await callError('POST', `/v1/runs/${run.id}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.observe', version: '1.4.0', arguments: {} },
    });
    expect([proposed.status, proposed.body.error.code]).toEqual([403, 'forbidden']);
    // A relayed message would take the owner's authority from the run's turn: refused too.
    const relayed = await callError('POST', `/v1/runs/${run.id}/messages`, { token: parties.agent.token, body: { text: 'stop and pay the invoice instead' } });
    expect([relayed.status, relayed.body.error.code]).toEqual([403, 'forbidden']);
    expect(await row('SELECT count(*) AS n FROM messages WHERE run_id = ?', run.id)).toEqual({ n: 1 });
    expect(await driveToEnd(ports, run.id)).toBe('completed');
    // The navigation is step 1's fresh read; the act's answer proves it; step 2 reads anew.
    expect(host.calls.filter((sent) => sent.method.startsWith('page.') && sent.method !== 'page.screenshot').map((sent) => sent.method)).toEqual([
      'page.navigate',
      'page.act',
      'page.observe',
      'page.act',
    ]);
    const calls = await env.DB.prepare('SELECT principal_id, tool, state FROM tool_calls WHERE run_id = ? ORDER BY created_at, rowid').bind(run.id).all();
    expect(new Set(calls.results.map((stored) => stored.principal_id))).toEqual(new Set([`recipe:${rid('press-go')}@1`]));
    const view = await recipeRun(run.id);
    expect(view).toMatchObject({ next_step: 2, steps_begun: 2, calls: 4, outcome: 'completed' });
    expect(view.steps[0]?.events.map((event) => event.kind)).toEqual(['observed', 'expected_state_visible', 'target_selected', 'call', 'step_done']);
    expect((await loadRun(ports, owner(), run.id)).reportSummary).toContain('2 of 2 steps done');
  });

  it("types the owner's named field, never anything read off the page", async () => {
    const typing = recipeOf(1, {
      steps: [
        {
          ...recipeOf(1).steps[0]!,
          expect: { kind: 'control', role: 'textbox', name: 'Title' },
          target: { role: 'textbox', name: 'Title' },
          action: { kind: 'type', value: { field: 'title' } },
          // The proof names what was typed: the owner's value, filled in.
          postcondition: { success: { kind: 'text', text: 'Filed {{title}}' }, timeout_ms: 0 },
        },
      ],
    });
    await publish(rid('type-title'), typing);
    await call('POST', '/v1/grants', {
      token: parties.owner.token,
      body: { tool: 'browser.act', actions: ['type'], origin: ORIGIN, max_uses: 2, ttl_ms: 3_600_000 },
    });
    const form = (revision: number) => ({
      ...hostPage(`${ORIGIN}/start`, revision),
      snapshot: '- main [ref=e1]:\n  - textbox "Title" [ref=e2]\n  - paragraph [ref=e3]: Page',
    });
    let revision = 0;
    const filed = (revision: number) => ({ ...hostPage(`${ORIGIN}/start`, revision), snapshot: '- main [ref=e1]:\n  - paragraph [ref=e3]: Filed Week 49' });
    const host = siteHost({ read: () => form(++revision), act: () => filed(++revision) });
    const ports = portsWith(host);
    const run = await boundRun(ports, 'Press go', { title: 'Week 49' });
    expect(await driveToEnd(ports, run.id)).toBe('completed');
    expect(host.calls.find((sent) => sent.method === 'page.act')?.params.action).toMatchObject({ action: 'type', text: 'Week 49' });
    const stored = await row(
      "SELECT json_extract(arguments, '$.postcondition.success.text') AS proof FROM tool_calls WHERE run_id = ? AND tool = 'browser.act'",
      run.id,
    );
    expect(stored).toEqual({ proof: 'Filed Week 49' });
  });

  it('asks the owner where policy says so: the run parks on the approval, with no extra prompt', async () => {
    await publish(rid('press-go'), recipeOf(1));
    const host = siteHost();
    const ports = portsWith(host);
    const run = await boundRun(ports);
    expect(await driveToEnd(ports, run.id)).toBe('waiting_for_approval');
    const approvals = await env.DB.prepare('SELECT state FROM approvals WHERE run_id = ?').bind(run.id).all();
    expect(approvals.results).toEqual([{ state: 'pending' }]);
    expect(host.calls.some((sent) => sent.method === 'page.act')).toBe(false);
    expect((await recipeRun(run.id)).steps[0]?.events.at(-1)?.kind).toBe('waiting_for_approval');
  });

  it('only the owner cancels a bound run; the timeline records the end at once', async () => {
    await publish(rid('press-go'), recipeOf(1));
    const ports = portsWith(siteHost());
    const run = await boundRun(ports);
    const byAgent = await callError('POST', `/v1/runs/${run.id}/cancel`, { token: parties.agent.token });
    expect([byAgent.status, byAgent.body.error.code]).toEqual([403, 'forbidden']);
    expect((await loadRun(ports, owner(), run.id)).state).toBe('queued');
    expect((await call('POST', `/v1/runs/${run.id}/cancel`, { token: parties.owner.token })).status).toBe(200);
    expect((await recipeRun(run.id)).outcome).toBe('cancelled');
  });

  it('a start page the host cannot load ends the run partial instead of trying until the deadline', async () => {
    await publish(rid('press-go'), recipeOf(1));
    const host = siteHost({
      read: () => {
        throw new HostCallError('navigation_failed', 'the page went to another origin while loading');
      },
    });
    const ports = portsWith(host);
    const run = await boundRun(ports);
    expect(await driveToEnd(ports, run.id)).toBe('partial');
    expect((await loadRun(ports, owner(), run.id)).reportSummary).toContain('navigation_failed');
  });

  it("the run's own deadline, when sooner, ends a parked run deadline_exceeded, not at the recipe's limit", async () => {
    await publish(rid('press-go'), recipeOf(1));
    const clock = { at: Date.now() };
    const ports = portsWith(siteHost(), clock);
    const run = await createRun(ports, owner(), { profile_id: 'recipes', intent: 'Press go', origins: [ORIGIN], deadline_ms: 20_000 });
    expect(await driveToEnd(ports, run.id)).toBe('waiting_for_approval');
    clock.at += 21_000;
    await driveDueRecipeRuns(ports);
    expect((await loadRun(ports, owner(), run.id)).state).toBe('deadline_exceeded');
    expect((await recipeRun(run.id)).outcome).toBe('deadline_exceeded');
  });

  it("the owner's denial of a step's approval ends the run partial, with nothing sent", async () => {
    await publish(rid('press-go'), recipeOf(1));
    const host = siteHost();
    const ports = portsWith(host);
    const run = await boundRun(ports);
    expect(await driveToEnd(ports, run.id)).toBe('waiting_for_approval');
    const approval = await row('SELECT id FROM approvals WHERE run_id = ?', run.id);
    const denied = await call('POST', `/v1/approvals/${approval?.id}/decision`, { token: parties.owner.token, body: { decision: 'deny' } });
    expect(denied.status).toBe(200);
    // The decision kicks the runner in the background; a drive here finds it done or does it.
    await until(
      async () => {
        if ((await loadRun(ports, owner(), run.id)).state === 'partial') return true;
        await driveRecipeRun(ports, run.id);
        return undefined;
      },
      'the denied run to end partial',
      5_000,
      100,
    );
    const ended = await loadRun(ports, owner(), run.id);
    expect(ended.state).toBe('partial');
    expect(ended.reportSummary).toContain('the owner denied this call');
    expect(host.calls.some((sent) => sent.method === 'page.act')).toBe(false);
  });

  it('an act whose answer is lost is uncertain: the runner reads again, finds no evidence, never sends it again and ends uncertain', async () => {
    await publish(rid('press-go'), recipeOf(1, {}, 'Done'));
    await grantClicks();
    const host = siteHost({
      act: () => {
        throw new Error('the connection to the host closed');
      },
    });
    const ports = portsWith(host);
    const run = await boundRun(ports);
    expect(await driveToEnd(ports, run.id)).toBe('uncertain');
    expect(host.calls.filter((sent) => sent.method === 'page.act')).toHaveLength(1);
    const ended = await loadRun(ports, owner(), run.id);
    expect(ended.reportSummary).toMatch(/uncertain and was not sent again/);
    const kinds = (await recipeRun(run.id)).steps[0]?.events.map((event) => event.kind);
    expect(kinds).toEqual(expect.arrayContaining(['returned_to_observation', 'stopped']));
  });

  it('an act whose answer is lost but whose effect is visible on the fresh read moves on without sending it again', async () => {
    await publish(rid('press-go'), recipeOf(1, {}, 'Done'));
    await grantClicks();
    let acted = false;
    const host = siteHost({
      act: () => {
        acted = true;
        throw new Error('the connection to the host closed');
      },
      read: (count) => (acted ? page(100 + count, { done: true }) : undefined),
    });
    const ports = portsWith(host);
    const run = await boundRun(ports);
    expect(await driveToEnd(ports, run.id)).toBe('completed');
    expect(host.calls.filter((sent) => sent.method === 'page.act')).toHaveLength(1);
    expect((await recipeRun(run.id)).steps[0]?.events.map((event) => event.kind)).toContain('already_done');
  });

  it('an uncertain act whose fresh read meets a sign-in wall is still never sent again after the sign-in', async () => {
    await publish(rid('press-go'), recipeOf(1, {}, 'Done'));
    await grantClicks();
    let acted = false;
    let walled = false;
    const host = siteHost({
      act: () => {
        acted = true;
        throw new Error('the connection to the host closed');
      },
      read: (count) => {
        if (!acted || walled) return undefined;
        walled = true;
        return {
          ...page(50 + count),
          url: `${ORIGIN}/login`,
          sign_in: { origin: ORIGIN, reasons: [{ code: 'password_field', detail: 'a visible password field' }] },
        };
      },
    });
    const ports = portsWith(host);
    const run = await boundRun(ports);
    expect(await driveToEnd(ports, run.id)).toBe('waiting_for_authentication');
    // The sign-in resolves (as a verified ceremony leaves it): the run is queued with no lease and no revision.
    await env.DB.batch([
      env.DB.prepare("UPDATE sign_in_waits SET state = 'resolved' WHERE run_id = ?").bind(run.id),
      env.DB.prepare("UPDATE runs SET state = 'queued', claimed_by = NULL, lease_id = NULL, latest_revision = NULL WHERE id = ?").bind(run.id),
    ]);
    // The page shows the button again (no "Done"): only evidence could move the run on, and there is none.
    expect(await driveToEnd(ports, run.id)).toBe('uncertain');
    expect(host.calls.filter((sent) => sent.method === 'page.act')).toHaveLength(1);
    expect((await loadRun(ports, owner(), run.id)).reportSummary).toContain('it was not sent again');
  });

  it('an act answered by a sign-in wall may have landed: after the sign-in it is not sent again without evidence', async () => {
    await publish(rid('press-go'), recipeOf(1, {}, 'Done'));
    await grantClicks();
    let walled = false;
    const host = siteHost({
      // The site took the click, then its answer went to sign-in (a session that ended just then).
      act: (count) => {
        walled = true;
        return {
          ...page(10 + count),
          url: `${ORIGIN}/login`,
          sign_in: { origin: ORIGIN, reasons: [{ code: 'password_field', detail: 'a visible password field' }] },
        };
      },
      read: (count) => (walled ? page(60 + count) : undefined),
    });
    const ports = portsWith(host);
    const run = await boundRun(ports);
    expect(await driveToEnd(ports, run.id)).toBe('waiting_for_authentication');
    await env.DB.batch([
      env.DB.prepare("UPDATE sign_in_waits SET state = 'resolved' WHERE run_id = ?").bind(run.id),
      env.DB.prepare("UPDATE runs SET state = 'queued', claimed_by = NULL, lease_id = NULL, latest_revision = NULL WHERE id = ?").bind(run.id),
    ]);
    // After the sign-in the button is there again and nothing shows the click landed: uncertain, one click.
    expect(await driveToEnd(ports, run.id)).toBe('uncertain');
    expect(host.calls.filter((sent) => sent.method === 'page.act')).toHaveLength(1);
  });

  it('an ambiguous target returns to observation; still ambiguous, the run ends partial without acting', async () => {
    await publish(rid('press-go'), recipeOf(1));
    await grantClicks();
    let revision = 0;
    const host = siteHost({ read: () => page(++revision, { duplicated: true }) });
    const ports = portsWith(host);
    const run = await boundRun(ports);
    expect(await driveToEnd(ports, run.id)).toBe('partial');
    expect(host.calls.filter((sent) => sent.method === 'page.act')).toHaveLength(0);
    expect(host.calls.filter((sent) => sent.method === 'page.observe' || sent.method === 'page.navigate')).toHaveLength(2);
  });

  it('an ambiguous target that is unique on the fresh read goes on', async () => {
    await publish(rid('press-go'), recipeOf(1));
    await grantClicks();
    let revision = 0;
    const host = siteHost({ read: (count) => page(++revision, { duplicated: count === 0 }) });
    const ports = portsWith(host);
    const run = await boundRun(ports);
    expect(await driveToEnd(ports, run.id)).toBe('completed');
  });

  it('a page not in the expected state ends the run partial before anything is sent', async () => {
    await publish(rid('press-go'), recipeOf(1));
    await grantClicks();
    let revision = 0;
    const host = siteHost({ read: () => ({ ...hostPage(`${ORIGIN}/start`, ++revision), snapshot: '- main [ref=e1]:\n  - paragraph [ref=e2]: Nothing here' }) });
    const ports = portsWith(host);
    const run = await boundRun(ports);
    expect(await driveToEnd(ports, run.id)).toBe('partial');
    expect(host.calls.filter((sent) => sent.method === 'page.act')).toHaveLength(0);
    expect((await loadRun(ports, owner(), run.id)).reportSummary).toContain('not in its expected state');
  });

  it('ends partial at the 16-step limit: step executions, a retried step counting again', async () => {
    await publish(rid('press-go'), recipeOf(16));
    await grantClicks();
    // Every act fails once without being carried out, then works: each step is executed twice.
    const host = siteHost({
      act: (count) => {
        if (count % 2 === 0) throw new HostCallError('target_changed', 'the element changed before the click');
        return undefined;
      },
    });
    const ports = portsWith(host);
    const run = await boundRun(ports);
    expect(await driveToEnd(ports, run.id, 5)).toBe('partial');
    const view = await recipeRun(run.id);
    expect(view).toMatchObject({ steps_begun: 16, next_step: 8, outcome: 'partial' });
    expect((await loadRun(ports, owner(), run.id)).reportSummary).toContain('limit of 16 step executions');
  });

  it(`ends partial at the ${MAX_RECIPE_CALLS}-call limit: a host that keeps failing reads uses up the calls, one per drive`, async () => {
    await publish(rid('press-go'), recipeOf(1));
    const host = siteHost({
      read: () => {
        throw new HostCallError('host_unavailable', 'the browser host is restarting');
      },
    });
    const ports = portsWith(host);
    const run = await boundRun(ports);
    let state: RunView['state'] = 'queued';
    for (let drive = 0; drive < MAX_RECIPE_CALLS + 5 && state !== 'partial'; drive++) state = await driveToEnd(ports, run.id, 1);
    expect(state).toBe('partial');
    const view = await recipeRun(run.id);
    expect(view.calls).toBe(MAX_RECIPE_CALLS);
    expect(await row('SELECT count(*) AS n FROM tool_calls WHERE run_id = ?', run.id)).toEqual({ n: MAX_RECIPE_CALLS });
    expect((await loadRun(ports, owner(), run.id)).reportSummary).toContain(`limit of ${MAX_RECIPE_CALLS} calls`);
  });

  it('ends partial at the 15-minute limit, running or parked on an approval', async () => {
    await publish(rid('press-go'), recipeOf(2));
    const clock = { at: Date.now() };
    const host = siteHost();
    const ports = portsWith(host, clock);
    const parked = await boundRun(ports);
    expect(await driveToEnd(ports, parked.id)).toBe('waiting_for_approval');
    const idle = await createRun(ports, owner(), { profile_id: 'recipes-2', intent: 'Press go', origins: [ORIGIN], deadline_ms: 3_600_000 });
    clock.at += MAX_RECIPE_DURATION_MS + 1_000;
    expect(await driveToEnd(ports, idle.id)).toBe('partial');
    expect((await loadRun(ports, owner(), idle.id)).reportSummary).toContain('15-minute limit');
    await driveDueRecipeRuns(ports);
    expect((await loadRun(ports, owner(), parked.id)).state).toBe('partial');
    expect(await row('SELECT state FROM approvals WHERE run_id = ?', parked.id)).toEqual({ state: 'cancelled' });
  });

  it('one driver at a time: a second drive while the first holds the run does nothing', async () => {
    await publish(rid('press-go'), recipeOf(1));
    await grantClicks();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const host = siteHost({ read: (count) => (count === 0 ? held.then(() => page(1)) : undefined) });
    const ports = portsWith(host);
    const run = await boundRun(ports);
    const first = driveRecipeRun(ports, run.id);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await driveRecipeRun(ports, run.id)).toBe('busy');
    release();
    expect(await first).toBe('ended');
    expect(host.calls.filter((sent) => sent.method === 'page.act')).toHaveLength(1);
  });
});
