import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { call, errorBody, partiesForEachTest } from './support/edge-client.ts';

// Setting an owner's webhook on the Workers edge over the real D1: only operators, only for an
// owner that exists, and a refusal writes nothing. Deliveries are in test/e2e/webhooks.

const parties = partiesForEachTest();
const SECRET = 'a-webhook-secret-of-at-least-32-characters';

const stored = async (ownerId: string) =>
  (await env.DB.prepare('SELECT count(*) AS n FROM owner_webhooks WHERE owner_id = ?').bind(ownerId).first<{ n: number }>())?.n;

describe('PUT /v1/owners/{owner_id}/webhook', () => {
  it("sets an owner's webhook for an operator, and never answers its secret", async () => {
    const answer = await call('PUT', `/v1/owners/${parties.owner.id}/webhook`, {
      token: parties.operator.token,
      body: { url: 'https://hooks.example/a', secret: SECRET },
    });
    expect(answer).toMatchObject({ status: 200, body: { owner_id: parties.owner.id, url: 'https://hooks.example/a' } });
    expect(JSON.stringify(answer.body)).not.toContain(SECRET);
    expect(await stored(parties.owner.id)).toBe(1);
  });

  it('refuses an id that is no owner, an owner token and a bad URL, and writes nothing', async () => {
    const body = { url: 'https://hooks.example/a', secret: SECRET };
    expect(await call('PUT', `/v1/owners/${parties.agent.id}/webhook`, { token: parties.operator.token, body })).toEqual({
      status: 404,
      body: errorBody('not_found', `no owner ${parties.agent.id}`),
    });
    expect(await call('PUT', `/v1/owners/${parties.owner.id}/webhook`, { token: parties.owner.token, body })).toEqual({
      status: 403,
      body: errorBody('forbidden', 'this endpoint is for operator principals, not owner'),
    });
    expect(
      await call('PUT', `/v1/owners/${parties.owner.id}/webhook`, { token: parties.operator.token, body: { url: 'ftp://hooks.example', secret: SECRET } }),
    ).toEqual({ status: 400, body: errorBody('invalid_request', '✖ an http or https URL\n  → at url') });
    expect(await stored(parties.agent.id)).toBe(0);
    expect(await stored(parties.owner.id)).toBe(0);
  });
});
