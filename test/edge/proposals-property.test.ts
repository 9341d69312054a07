import { env } from 'cloudflare:test';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import { type RunView, ToolCallView } from '../../shared/api.ts';
import { ErrorBody } from '../../shared/errors.ts';
import { TOOLS, ToolName, ToolVersion } from '../../shared/tools.ts';
import { OBSERVED_CONTROLS, type Parties, seedParties, setLatestPage, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';
import { ORIGIN, PAGE } from './support/run-fixture.ts';
import { arbitraryOf } from './support/schema-arbitrary.ts';

// A property over generated proposals (README "Security"), 2,000 cases per run on the Workers
// edge's app in workerd against the real D1: tool-call proposals drawn from the tools' own zod
// schemas (every version), near misses and arbitrary JSON. Whatever comes in: no 5xx; every
// answer is the documented schema of that route and status; and nothing is dispatched without an
// allow, an approval or a grant. A stand-in host answers every command and records what it was
// sent, so a dispatch is seen where it happens, not inferred.

const CASES = 2_000;
/** New parties (owner, agents) and run every this many cases, so the per-minute quotas never bind. */
const CASES_PER_RUN = 150;
const PATH = '/v1/runs/{id}/tool-calls';

/** URLs worth trying: the run's own pages, other origins, schemes that must never load, credentials, odd spellings. */
const urls = fc.oneof(
  fc.constantFrom(
    PAGE,
    `${ORIGIN}/other?x=1#y`,
    ' HTTP://127.0.0.1:8123/feed#top ',
    'http://evil.example/',
    'http://127.0.0.1:9/',
    'http://169.254.169.254/latest/meta-data',
    'http://user:secret@127.0.0.1:8123/feed',
    'javascript:alert(1)',
    'file:///etc/passwd',
    'data:text/html,hi',
    'about:blank',
  ),
  fc.webUrl(),
  fc.string({ maxLength: 40 }),
);

/** One proposal body: mostly schema-shaped arguments for a tool and version, sometimes anything at all. */
const proposals = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...ToolName.options).chain((tool) => proposalOf(tool)) },
  { weight: 1, arbitrary: fc.record({ tool: fc.string({ maxLength: 20 }), version: fc.string({ maxLength: 8 }), arguments: fc.jsonValue() }) },
  { weight: 1, arbitrary: fc.jsonValue() },
);

function proposalOf(tool: ToolName) {
  const versions = Object.keys(TOOLS[tool].arguments) as ToolVersion[];
  return fc.constantFrom(...versions).chain((version) =>
    fc.record({
      tool: fc.constant(tool),
      version: fc.oneof({ weight: 9, arbitrary: fc.constant(version) }, { weight: 1, arbitrary: fc.constantFrom(...ToolVersion.options, '9.9.9') }),
      arguments: arbitraryOf((TOOLS[tool].arguments as Record<string, Parameters<typeof arbitraryOf>[0]>)[version]!, {
        url: urls,
        revision: fc.constantFrom(3, 3, 3, 2, 0),
        reference: fc.constantFrom('e1', 'e5', 'e9', 'e42', 'f1e2'),
        // Conditions are read until met or timed out: keep each case short.
        timeout_ms: fc.integer({ min: 0, max: 300 }),
      }),
    }),
  );
}

/** The statuses the OpenAPI document lists for proposing a call. */
async function documentedStatuses(request: (path: string, init?: RequestInit) => Promise<Response>): Promise<Set<number>> {
  const document = (await (await request('/v1/openapi.json')).json()) as {
    paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  };
  return new Set(Object.keys(document.paths[PATH]!.post!.responses).map(Number));
}

/**
 * A stand-in host: leases, finds the control e3 at every point and the feed page at every history
 * move, and answers every other page command with the feed page at revision 3 (the controls e1 to e9).
 */
function recordingHost() {
  return scriptedHost(async (method, params) => {
    if (method === 'lease.acquire' || method === 'lease.renew') {
      return { lease_id: 'lease_property0001', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
    }
    if (method === 'page.hit_test') return { reference: 'e3' };
    if (method === 'page.history') return { url: PAGE };
    if (method.startsWith('page.')) return { ...hostPage(PAGE, 3), snapshot: `- main [ref=e0]:\n${OBSERVED_CONTROLS}` };
    return { released: true };
  });
}

describe('generated proposals', () => {
  it(`${CASES} cases: never a 5xx, always a documented answer, never a dispatch without an allow, an approval or a grant`, { timeout: 600_000 }, async () => {
    const host = recordingHost();
    const app = createApp(() => workerdPorts(host.connector));
    const request = async (path: string, init?: RequestInit) => app.request(`http://edge.test${path}`, init);
    const send = async (token: string, method: string, path: string, body?: unknown) => {
      const response = await request(path, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as unknown };
    };
    const statuses = await documentedStatuses(request);
    let parties: Parties | undefined;
    let runId = '';
    let cases = 0;
    const runs: string[] = [];
    const fresh = async () => {
      parties = await seedParties();
      const created = await send(parties.owner.token, 'POST', '/v1/runs', { profile_id: 'property', intent: 'read my feed and tidy it', origins: [ORIGIN] });
      expect(created.status).toBe(201);
      runId = (created.body as RunView).id;
      runs.push(runId);
      await setLatestPage(runId, 3, PAGE);
      // A grant for clicks on the run's origin, so covered acts are among the cases.
      await send(parties.owner.token, 'POST', '/v1/grants', { tool: 'browser.act', origin: ORIGIN, actions: ['click'], ttl_ms: 600_000, max_uses: 50 });
    };

    await fc.assert(
      fc.asyncProperty(proposals, async (body) => {
        if (cases++ % CASES_PER_RUN === 0) await fresh();
        const answer = await send(parties!.agent.token, 'POST', `/v1/runs/${runId}/tool-calls`, body);
        const shown = JSON.stringify(answer.body).slice(0, 500);
        expect(answer.status, shown).toBeLessThan(500);
        expect(statuses.has(answer.status), `${answer.status} is not documented: ${shown}`).toBe(true);
        if (answer.status === 200 || answer.status === 202) {
          const view = ToolCallView.safeParse(answer.body);
          expect(view.success, shown).toBe(true);
          // The owner answers at once, so the run takes the next case.
          if (answer.status === 202) {
            const decision = await send(parties!.owner.token, 'POST', `/v1/approvals/${view.data!.approval_id}/decision`, { decision: 'deny' });
            expect(decision.status).toBe(200);
          }
        } else {
          expect(ErrorBody.safeParse(answer.body).success, shown).toBe(true);
        }
      }),
      { numRuns: CASES },
    );

    // Every call that reached dispatch had a warrant: allowed by policy, covered by a grant, or approved.
    const placeholders = runs.map(() => '?').join(', ');
    const { results } = await env.DB.prepare(
      `SELECT id, tool, decision_effect, json_extract(phases, '$.decision.grant_id') AS grant_id, json_extract(phases, '$.approval.decision') AS approval,
              json_extract(phases, '$.dispatch.outcome') AS outcome
       FROM tool_calls WHERE run_id IN (${placeholders}) AND json_extract(phases, '$.dispatch') IS NOT NULL`,
    )
      .bind(...runs)
      .all<{ id: string; tool: string; decision_effect: string | null; grant_id: string | null; approval: string | null; outcome: string }>();
    const unwarranted = results.filter((row) => !(row.decision_effect === 'allow' || row.grant_id !== null || row.approval === 'approved'));
    expect(unwarranted).toEqual([]);
    // And the host was sent exactly the navigations and acts of those calls, nothing else.
    const sent = host.calls.filter((entry) => entry.method === 'page.navigate' || entry.method === 'page.act').length;
    const answered = results.filter((row) => row.tool !== 'browser.observe' && row.outcome === 'answered').length;
    expect(answered).toBeGreaterThan(0);
    expect(sent).toBe(answered);
  });
});
