import { describe, expect, test } from 'vitest';
import { startBrowserHost } from '../../browser-host/host.ts';
import { ceremonyId, claimsOf } from '../support/ceremony-fixture.ts';
import { startFixtureServer } from '../support/fixture-server.ts';
import { connectHost } from '../support/host-client.ts';
import { TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';

// A ceremony that ends (ceremony.end) while begin's first session check still runs must
// not leave the person's sign-in window open on the profile's browser afterwards: README "after a
// ceremony ends ... nothing is navigable for the sign-in any more", and the next lease's document
// check is the run's origins only.

describe('a ceremony ended during its initial session check', () => {
  test("leaves no sign-in window behind: the next lease cannot navigate outside its run's origins", async () => {
    const site = await startFixtureServer();
    const elsewhere = await startFixtureServer();
    const profiles = await temporaryDirectory('end-during-check-');
    // `elsewhere` is reachable at the connection level (as any public origin would be); only the document check stands in the way.
    const host = await startBrowserHost(testHostConfig(profiles.dir, { egress: { allow: [elsewhere.origin], deny: [] }, ceremonyPollMs: 200 }));
    const client = await connectHost(host.url, TEST_SECRET);
    try {
      // Control: the same navigation on a profile no ceremony touched is refused.
      const control = await client.call('lease.acquire', { run_id: 'run_control', profile_id: 'untouched', origins: [site.origin], ttl_ms: 60_000 });
      expect(await client.request('page.navigate', { lease_id: control.lease_id, url: elsewhere.url('quiet.html'), timeout_ms: 15_000 })).toMatchObject({
        error: { code: 'navigation_failed' },
      });
      await client.call('lease.release', { lease_id: control.lease_id });

      const id = ceremonyId();
      // The protected page answers slowly, so begin's session check is still running when the ceremony is ended.
      const beginning = client.call('ceremony.begin', {
        ceremony_id: id,
        profile_id: 'ended-early',
        origin: site.origin,
        generation: 1,
        sign_in_url: site.url('quiet.html'),
        protected_url: site.url('delay?ms=6000'),
        timeout_ms: 60_000,
      });
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(await client.call('ceremony.end', { ceremony_id: id })).toEqual({ ended: true });
      const answer = await beginning;
      expect(answer.state).toBe('ended');
      expect((await claimsOf(answer)).outcome).toBe('ended');
      await new Promise((resolve) => setTimeout(resolve, 1_000));

      // An agent's lease of the profile, for the site only.
      const lease = await client.call('lease.acquire', { run_id: 'run_after', profile_id: 'ended-early', origins: [site.origin], ttl_ms: 60_000 });
      const away = await client.request('page.navigate', { lease_id: lease.lease_id, url: elsewhere.url('quiet.html'), timeout_ms: 15_000 });
      // Expected: refused like any navigation outside the run's origins.
      expect(away).toMatchObject({ error: { code: 'navigation_failed' } });
      await client.call('lease.release', { lease_id: lease.lease_id });
    } finally {
      await client.close();
      await host.close();
      await elsewhere.close();
      await site.close();
      await profiles.remove();
    }
  });
});
