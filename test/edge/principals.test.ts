import { env, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { PRINCIPAL_CACHE_MS, principalForToken } from '../../edge/auth/bearer-token.ts';
import type { IssuedPrincipal, PrincipalList, PrincipalView, RunList, RunView } from '../../shared/api.ts';
import { call, callError, errorBody, partiesForEachTest, row, workerdPorts } from './support/edge-client.ts';
import { ORIGIN } from './support/run-fixture.ts';

// The operator's principals API (issue 32): owners and agents created with a token shown once and
// stored hashed, listed without token material, rotated and revoked; revoked and rotated tokens
// are refused at once by the edge that made the change, and by every edge within 5 s.

const parties = partiesForEachTest();
const operator = () => parties.operator.token;

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Creates a principal as the operator; the answer must be 201. */
async function created(body: Record<string, unknown>): Promise<IssuedPrincipal> {
  const answer = await call<IssuedPrincipal>('POST', '/v1/principals', { token: operator(), body });
  expect(answer.status).toBe(201);
  return answer.body;
}

/** Creates a run with `token`; the status. */
async function runWith(token: string): Promise<number> {
  return (await call<RunView>('POST', '/v1/runs', { token, body: { profile_id: 'demo', intent: 'work', origins: [ORIGIN] } })).status;
}

/** The principals table, for "nothing changed" checks. */
async function principalRows(): Promise<unknown[]> {
  return (await env.DB.prepare('SELECT * FROM principals ORDER BY id').all()).results;
}

const revokedBody = (id: string) => errorBody('principal_revoked', `principal ${id} was revoked; ask an operator for a new principal`);

describe('the principals API', () => {
  it('creates an owner and an agent of it: tokens shown once, stored only hashed, and they work', async () => {
    const owner = await created({ kind: 'owner', label: 'Ada' });
    expect(owner).toEqual({
      id: expect.stringMatching(/^prn_[a-z2-7]{20}$/),
      kind: 'owner',
      owner_id: owner.id,
      label: 'Ada',
      created_at: expect.any(String),
      revoked_at: null,
      token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    const agent = await created({ kind: 'agent', owner_id: owner.id });
    expect(agent).toMatchObject({ kind: 'agent', owner_id: owner.id, label: '', revoked_at: null });
    expect(await row('SELECT token_hash FROM principals WHERE id = ?', agent.id)).toEqual({ token_hash: await sha256Hex(agent.token) });
    expect(JSON.stringify(await principalRows())).not.toContain(agent.token);

    expect(await runWith(agent.token)).toBe(201);
    const runs = await call<RunList>('GET', '/v1/runs', { token: owner.token });
    expect([runs.status, runs.body.runs.length]).toEqual([200, 1]);
  });

  it('lists every principal without token material', async () => {
    const owner = await created({ kind: 'owner' });
    const list = await call<PrincipalList>('GET', '/v1/principals', { token: operator() });
    expect(list.status).toBe(200);
    const { token: _token, ...view } = owner;
    expect(list.body.principals).toContainEqual(view);
    expect(list.body.principals).toContainEqual(expect.objectContaining({ id: parties.agent.id, kind: 'agent', owner_id: parties.owner.id }));
    for (const principal of list.body.principals)
      expect(Object.keys(principal).sort()).toEqual(['created_at', 'id', 'kind', 'label', 'owner_id', 'revoked_at']);
  });

  it('rotation gives a new token that works; the old one is refused at once, even just after it was used', async () => {
    expect(await runWith(parties.agent.token)).toBe(201);
    const rotated = await call<IssuedPrincipal>('POST', `/v1/principals/${parties.agent.id}/rotate`, { token: operator() });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ id: parties.agent.id, kind: 'agent', revoked_at: null });
    expect(rotated.body.token).not.toBe(parties.agent.token);
    expect(await callError('GET', '/v1/tool-calls/call_x', { token: parties.agent.token })).toEqual({
      status: 401,
      body: errorBody('unauthenticated', 'the bearer token is not known'),
    });
    expect(await runWith(rotated.body.token)).toBe(201);
  });

  it('a revoked principal is refused with 401 principal_revoked, and so are its agents; revoking again is 409', async () => {
    expect(await runWith(parties.agent.token)).toBe(201);
    const revoked = await call<PrincipalView>('POST', `/v1/principals/${parties.owner.id}/revoke`, { token: operator() });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: parties.owner.id, kind: 'owner', revoked_at: expect.any(String) });

    expect(await callError('GET', '/v1/runs', { token: parties.owner.token })).toEqual({ status: 401, body: revokedBody(parties.owner.id) });
    expect(await callError('POST', '/v1/runs', { token: parties.agent.token, body: {} })).toEqual({
      status: 401,
      body: errorBody('principal_revoked', `the owner ${parties.owner.id} that principal ${parties.agent.id} acts for was revoked`),
    });
    // The operator acting for that owner in these tests keeps working, and so does another owner's agent.
    expect((await call('GET', '/v1/principals', { token: operator() })).status).toBe(200);
    expect(await runWith(parties.strangerAgent.token)).toBe(201);

    const before = await principalRows();
    expect(await callError('POST', `/v1/principals/${parties.owner.id}/revoke`, { token: operator() })).toEqual({
      status: 409,
      body: errorBody('already_revoked', `principal ${parties.owner.id} was revoked at ${revoked.body.revoked_at}`),
    });
    expect(await callError('POST', `/v1/principals/${parties.owner.id}/rotate`, { token: operator() })).toEqual({
      status: 409,
      body: errorBody('already_revoked', `principal ${parties.owner.id} is revoked: its token cannot be rotated`),
    });
    expect(await callError('POST', '/v1/principals', { token: operator(), body: { kind: 'agent', owner_id: parties.owner.id } })).toEqual({
      status: 409,
      body: errorBody('already_revoked', `owner ${parties.owner.id} is revoked: it can have no new agent`),
    });
    expect(await principalRows()).toEqual(before);
  });

  it('an agent of a revoked owner cannot be rotated: 409 already_revoked, and its token hash is unchanged', async () => {
    expect((await call('POST', `/v1/principals/${parties.owner.id}/revoke`, { token: operator() })).status).toBe(200);
    const before = await principalRows();
    expect(await callError('POST', `/v1/principals/${parties.agent.id}/rotate`, { token: operator() })).toEqual({
      status: 409,
      body: errorBody('already_revoked', `principal ${parties.agent.id} acts for the revoked owner ${parties.owner.id}: its token cannot be rotated`),
    });
    expect(await principalRows()).toEqual(before);
    // Another owner's agent still rotates: the check is of the agent's own owner.
    expect((await call('POST', `/v1/principals/${parties.strangerAgent.id}/rotate`, { token: operator() })).status).toBe(200);
  });

  it("a revoked agent's MCP request is refused with the bearer challenge", async () => {
    await call('POST', `/v1/principals/${parties.agent.id}/revoke`, { token: operator() });
    const answer = await SELF.fetch('http://127.0.0.1:8787/mcp', {
      method: 'POST',
      headers: { authorization: `Bearer ${parties.agent.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect({ status: answer.status, body: await answer.json() }).toEqual({ status: 401, body: revokedBody(parties.agent.id) });
    expect(answer.headers.get('WWW-Authenticate')).toMatch(/^Bearer resource_metadata=".*", error="invalid_token"$/);
  });

  it('revoking an owner ends its console sessions and uses up its sign-in links', async () => {
    const now = Date.now();
    await env.DB.prepare("INSERT INTO console_sessions (id_hash, owner_id, csrf_token, created_at, expires_at) VALUES (?, ?, 'csrf', ?, ?)")
      .bind(`session-${parties.owner.id}`, parties.owner.id, now, now + 3_600_000)
      .run();
    await env.DB.prepare('INSERT INTO console_links (token_hash, owner_id, created_at, expires_at) VALUES (?, ?, ?, ?)')
      .bind(`link-${parties.owner.id}`, parties.owner.id, now, now + 600_000)
      .run();
    await call('POST', `/v1/principals/${parties.owner.id}/revoke`, { token: operator() });
    expect(await row('SELECT ended_at IS NOT NULL AS ended FROM console_sessions WHERE owner_id = ?', parties.owner.id)).toEqual({ ended: 1 });
    expect(await row('SELECT used_at IS NOT NULL AS used FROM console_links WHERE owner_id = ?', parties.owner.id)).toEqual({ used: 1 });
  });

  it('another edge that remembered a token refuses it once 5 s have passed since it resolved it', async () => {
    const ports = workerdPorts();
    expect(await principalForToken(ports, parties.secondAgent.token)).toMatchObject({ id: parties.secondAgent.id });
    // Revoked elsewhere: this isolate's memory is not told.
    await env.DB.prepare('UPDATE principals SET revoked_at = ? WHERE id = ?').bind(Date.now(), parties.secondAgent.id).run();
    expect(await principalForToken(ports, parties.secondAgent.token)).toMatchObject({ id: parties.secondAgent.id });
    await new Promise((resolve) => setTimeout(resolve, PRINCIPAL_CACHE_MS + 50));
    await expect(principalForToken(ports, parties.secondAgent.token)).rejects.toMatchObject({ code: 'principal_revoked' });
  }, 15_000);

  it('the last unrevoked operator cannot be revoked; another operator can', async () => {
    const second = `prn_second_${parties.operator.id}`;
    await env.DB.prepare("INSERT INTO principals (id, kind, owner_id, token_hash, created_at) VALUES (?, 'operator', ?, ?, ?)")
      .bind(second, parties.owner.id, await sha256Hex(second), Date.now())
      .run();
    await env.DB.prepare("UPDATE principals SET revoked_at = ? WHERE kind = 'operator' AND id NOT IN (?, ?) AND revoked_at IS NULL")
      .bind(Date.now(), parties.operator.id, second)
      .run();
    expect((await call('POST', `/v1/principals/${second}/revoke`, { token: operator() })).status).toBe(200);
    const before = await principalRows();
    expect(await callError('POST', `/v1/principals/${parties.operator.id}/revoke`, { token: operator() })).toEqual({
      status: 409,
      body: errorBody('last_operator', `principal ${parties.operator.id} is the last unrevoked operator: revoking it would leave no one to manage principals`),
    });
    expect(await principalRows()).toEqual(before);
    expect((await call('GET', '/v1/principals', { token: operator() })).status).toBe(200);
  });

  it('owners and agents cannot use it', async () => {
    const routes: [string, string, unknown][] = [
      ['POST', '/v1/principals', { kind: 'owner' }],
      ['GET', '/v1/principals', undefined],
      ['POST', `/v1/principals/${parties.agent.id}/rotate`, undefined],
      ['POST', `/v1/principals/${parties.agent.id}/revoke`, undefined],
    ];
    const before = await principalRows();
    for (const [method, path, body] of routes) {
      for (const [kind, token] of [
        ['owner', parties.owner.token],
        ['agent', parties.agent.token],
      ] as const) {
        expect(await callError(method, path, { token, body }), `${kind} ${method} ${path}`).toEqual({
          status: 403,
          body: errorBody('forbidden', `this endpoint is for operator principals, not ${kind}`),
        });
      }
    }
    expect(await principalRows()).toEqual(before);
  });

  it('bad input is 400 (or 404 for an unknown principal) with a stable code, and changes nothing', async () => {
    const before = await principalRows();
    const refusals = {
      operatorKind: await callError('POST', '/v1/principals', { token: operator(), body: { kind: 'operator' } }),
      agentWithoutOwner: await callError('POST', '/v1/principals', { token: operator(), body: { kind: 'agent' } }),
      ownerWithOwner: await callError('POST', '/v1/principals', { token: operator(), body: { kind: 'owner', owner_id: parties.owner.id } }),
      longLabel: await callError('POST', '/v1/principals', { token: operator(), body: { kind: 'owner', label: 'x'.repeat(201) } }),
      malformed: await callError('POST', '/v1/principals', { token: operator(), raw: '{"kind":' }),
      badId: await callError('POST', '/v1/principals/prn%20x/rotate', { token: operator() }),
      agentAsOwner: await callError('POST', '/v1/principals', { token: operator(), body: { kind: 'agent', owner_id: parties.agent.id } }),
      unknownOwner: await callError('POST', '/v1/principals', { token: operator(), body: { kind: 'agent', owner_id: 'prn_nobody' } }),
      unknownRotate: await callError('POST', '/v1/principals/prn_nobody/rotate', { token: operator() }),
      unknownRevoke: await callError('POST', '/v1/principals/prn_nobody/revoke', { token: operator() }),
    };
    expect(Object.fromEntries(Object.entries(refusals).map(([name, answer]) => [name, [answer.status, answer.body.error.code]]))).toEqual({
      operatorKind: [400, 'invalid_request'],
      agentWithoutOwner: [400, 'invalid_request'],
      ownerWithOwner: [400, 'invalid_request'],
      longLabel: [400, 'invalid_request'],
      malformed: [400, 'malformed_json'],
      badId: [400, 'invalid_request'],
      agentAsOwner: [404, 'not_found'],
      unknownOwner: [404, 'not_found'],
      unknownRotate: [404, 'not_found'],
      unknownRevoke: [404, 'not_found'],
    });
    expect(refusals.unknownOwner.body).toEqual(errorBody('not_found', 'owner_id: no owner prn_nobody'));
    expect(refusals.unknownRevoke.body).toEqual(errorBody('not_found', 'no principal prn_nobody'));
    expect(await principalRows()).toEqual(before);
  });
});
