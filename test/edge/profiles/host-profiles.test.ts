import { describe, expect, it } from 'vitest';
import { hostProfileId } from '../../../edge/profiles/bindings.ts';
import { partiesForEachTest } from '../support/edge-client.ts';

// The browser profile on the host that an owner's named profile maps to.

const parties = partiesForEachTest();

describe('host profiles', () => {
  it('two owners naming the same profile get different browsers on the host', async () => {
    const mine = await hostProfileId(parties.owner.id, 'shopping');
    const theirs = await hostProfileId(parties.strangerOwner.id, 'shopping');
    expect(mine).not.toBe(theirs);
    expect(mine).toMatch(/^o[0-9a-f]{12}_shopping$/);
  });
});
