import { describe, expect } from 'vitest';
import { begin, ceremonyId, ceremonyTest, claimsOf, deliveredFor, personSignsIn, stateBecomes } from '../support/ceremony-fixture.ts';

// No site definition: the host knows nothing about the site. Headed, on the host's own Xvfb: the
// person signs in at the real headed window.
const test = ceremonyTest('none', { headless: false, display: undefined });

describe('differential verification of an unknown site (headed)', () => {
  test('after the person signs in at the headed window, the profile reaches the protected page and a clean control load does not: verified', async ({
    world,
    client,
  }) => {
    expect(world.host.display?.name).toMatch(/^:\d+$/);
    const id = ceremonyId();
    expect(await begin(client, world, 'unknown-site', { id })).toEqual({ ceremony_id: id, state: 'awaiting_person' });
    const denied = world.site.counters().protected_denied;
    await personSignsIn(world, 'unknown-site', 'alice');
    const verified = await stateBecomes(client, id, 'verified');
    const claims = await claimsOf(verified);
    expect(claims).toMatchObject({ outcome: 'verified', method: 'differential', profile_id: 'unknown-site' });
    expect(claims.definition).toBeUndefined();
    expect(claims.account_sha256).toBeUndefined();
    // The control load was sent to sign-in by the site itself.
    expect(world.site.counters().protected_denied).toBeGreaterThan(denied);
    expect(await deliveredFor(world.receiver, id)).toEqual([claims]);
  });

  test('a public page is never verified: the control load reaches it too, so nothing is proven', async ({ world, client }) => {
    const id = ceremonyId();
    const publicLoads = world.site.counters().public_loads;
    expect(await begin(client, world, 'public-page', { id, timeoutMs: 20_000, protectedPath: '/public', signInPath: '/signin?next=/public' })).toMatchObject({
      state: 'awaiting_person',
    });
    await personSignsIn(world, 'public-page', 'alice');
    const ended = await stateBecomes(client, id, 'not_verified', 40_000);
    expect(await claimsOf(ended)).toMatchObject({ outcome: 'not_verified', method: 'differential' });
    // The person's landing, the profile's load and the control load at least.
    expect(world.site.counters().public_loads).toBeGreaterThanOrEqual(publicLoads + 3);
  });
});
