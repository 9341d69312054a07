import { describe, expect, it } from 'vitest';
import type { PolicyProfileView } from '../../shared/policy.ts';
import { call, callError, partiesForEachTest } from './support/edge-client.ts';
import { runFixture } from './support/run-fixture.ts';

// Policy profiles: operators publish versions; owners may read them.

const parties = partiesForEachTest();
const { publish } = runFixture(parties);

describe('policy profiles', () => {
  it('publishing a version changes the hash; owners may read but not publish', async () => {
    const before = await call<PolicyProfileView>('GET', '/v1/policy-profiles/default', { token: parties.owner.token });
    expect(before.body).toMatchObject({ name: 'default', version: 3 });
    expect(before.body.rules.map((rule: { id: string }) => rule.id)).toEqual([
      'observe.allow',
      'navigate.run_origins',
      'act.bounded_scroll',
      'act.bounded_hover',
      'act.approval',
    ]);
    const byOwner = await callError('POST', '/v1/policy-profiles/team', { token: parties.owner.token, body: { rules: [], denies: [] } });
    expect([byOwner.status, byOwner.body.error.code]).toEqual([403, 'forbidden']);
    const v1 = await publish('team', { rules: [{ id: 'observe.allow', tool: 'browser.observe', effect: 'allow' }], denies: [] });
    const v2 = await publish('team', { rules: [{ id: 'observe.ask', tool: 'browser.observe', effect: 'approval' }], denies: [] });
    expect([v1.version, v2.version]).toEqual([1, 2]);
    expect(v2.hash).not.toBe(v1.hash);
  });

  it.each([
    ['an unknown condition', { rules: [{ id: 'x', tool: 'browser.act', effect: 'allow', condition: 'anything_goes' }], denies: [] }],
    ['an unknown tool', { rules: [{ id: 'x', tool: 'shell.exec', effect: 'allow' }], denies: [] }],
    ['a deny without reason', { rules: [], denies: [{ id: 'x', tool: 'browser.act' }] }],
  ])('a profile with %s is refused', async (_name, body) => {
    const answer = await callError('POST', '/v1/policy-profiles/bad', { token: parties.operator.token, body });
    expect([answer.status, answer.body.error.code]).toEqual([400, 'invalid_request']);
  });
});
