import { createHash } from 'node:crypto';
import { access, readdir } from 'node:fs/promises';
import { describe, expect, vi } from 'vitest';
import { startBrowserHost } from '../../browser-host/host.ts';
import { accountSiteDefinition } from '../../scripts/account-site.ts';
import { plantCookie } from '../../scripts/person-at-browser.ts';
import { begin, ceremonyId, ceremonyTest, claimsOf, deliveredFor, personSignsIn, profileDir, signedIn, stateBecomes } from '../support/ceremony-fixture.ts';
import { connectHost } from '../support/host-client.ts';
import { acquire, TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';

const test = ceremonyTest('fixture');

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

describe('sign-in ceremonies with a reviewed site definition', () => {
  test('a person signing in at the browser is verified; the signed event reaches the edge once, with the account hash', async ({ world, client }) => {
    const id = ceremonyId();
    const started = await begin(client, world, 'alice-verified', { id, generation: 3 });
    expect(started).toEqual({ ceremony_id: id, state: 'awaiting_person' });
    expect(await client.call('host.status', {})).toMatchObject({ ceremonies_open: 1, verification_loads: 0 });
    // The person holds the profile: no agent lease meanwhile.
    expect(
      await client.request('lease.acquire', { run_id: 'agent', profile_id: 'alice-verified', origins: [world.site.origin], ttl_ms: 60_000, wait_ms: 300 }),
    ).toMatchObject({
      error: { code: 'admission_full' },
    });

    await personSignsIn(world, 'alice-verified', 'alice');
    const verified = await stateBecomes(client, id, 'verified');
    const claims = await claimsOf(verified);
    expect(claims).toEqual({
      event_id: expect.stringMatching(/^cev_/),
      ceremony_id: id,
      host_id: 'host-test',
      profile_id: 'alice-verified',
      origin: world.site.origin,
      generation: 3,
      outcome: 'verified',
      method: 'definition',
      definition: { id: 'fixture-reports', version: 1 },
      account_sha256: sha256('alice@example.test'),
      decided_at_ms: expect.any(Number),
      // The person's window stayed on the site (DESIGN.md section 18: where the sign-in went).
      visited_origins: [world.site.origin],
    });
    const delivered = await deliveredFor(world.receiver, id);
    expect(delivered).toEqual([claims]);
    expect(world.receiver.rejected()).toBe(0);
    // Asked again: the same event (same id and claims), signed afresh.
    expect(await claimsOf(await client.call('ceremony.status', { ceremony_id: id }))).toEqual(claims);
    expect(await client.call('host.status', {})).toMatchObject({ ceremonies_open: 0, verification_loads: 0 });

    // The hold is gone and the browser stays open: a run's fresh lease reads the signed-in page.
    const lease = await acquire(client, 'alice-verified', 60_000, 0, [world.site.origin]);
    const page = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(page.snapshot).toContain('Signed in as alice@example.test');
    expect(page).not.toHaveProperty('sign_in');
    await client.call('lease.release', { lease_id: lease.lease_id });
  });

  test("with a definition, evidence is read on the definition's protected page, whichever page the run was after", async ({ world, client }) => {
    // The run was after /reports/new; the definition's evidence lives on /reports.
    const id = ceremonyId();
    expect((await begin(client, world, 'alice-deep-link', { id, protectedPath: '/reports/new' })).state).toBe('awaiting_person');
    await personSignsIn(world, 'alice-deep-link', 'alice');
    const verified = await stateBecomes(client, id, 'verified');
    expect(await claimsOf(verified)).toMatchObject({ outcome: 'verified', method: 'definition', account_sha256: sha256('alice@example.test') });
  });

  test('a profile that already holds a valid session is verified at once, without showing the sign-in page', async ({ world, client }) => {
    await signedIn(client, world, 'alice-reuse', 'alice');
    const before = world.site.counters();
    const id = ceremonyId();
    const again = await begin(client, world, 'alice-reuse', { id, generation: 2 });
    expect(again.state).toBe('verified');
    expect(await claimsOf(again)).toMatchObject({ ceremony_id: id, outcome: 'verified', generation: 2, account_sha256: sha256('alice@example.test') });
    const after = world.site.counters();
    expect(after.sign_in_pages).toBe(before.sign_in_pages);
    expect(after.sign_ins).toBe(before.sign_ins);
    expect(after.protected_loads).toBe(before.protected_loads + 1);
    expect(await deliveredFor(world.receiver, id)).toHaveLength(1);
  });

  test("carol's challenge is shown as the state but never verified; at the timeout the outcome is not_verified", async ({ world, client }) => {
    const served = world.site.counters().protected_loads;
    const id = ceremonyId();
    expect(await begin(client, world, 'carol', { id, timeoutMs: 12_000 })).toMatchObject({ state: 'awaiting_person' });
    await personSignsIn(world, 'carol', 'carol');
    await stateBecomes(client, id, 'challenge', 10_000);
    const ended = await stateBecomes(client, id, 'not_verified', 20_000);
    expect(await claimsOf(ended)).toMatchObject({ outcome: 'not_verified', method: 'definition' });
    expect(ended.event).toBeDefined();
    const delivered = await deliveredFor(world.receiver, id);
    expect(delivered.map((event) => event.outcome)).toEqual(['not_verified']);
    // Carol's challenged session never got a protected page.
    expect(world.site.counters().protected_loads).toBe(served);
  });

  test('a planted sid cookie without a session is not proof: not_verified at the timeout', async ({ world, client }) => {
    // The profile's browser runs (a lease launches it); something plants a cookie in it.
    const lease = await acquire(client, 'planted', 60_000, undefined, [world.site.origin]);
    await client.call('lease.release', { lease_id: lease.lease_id });
    await plantCookie({ profileDir: profileDir(world, 'planted'), origin: world.site.origin, name: 'sid', value: 'forged-session-id', timeoutMs: 10_000 });
    const denied = world.site.counters().protected_denied;

    const id = ceremonyId();
    expect(await begin(client, world, 'planted', { id, timeoutMs: 3_000 })).toEqual({ ceremony_id: id, state: 'awaiting_person' });
    // The session check really loaded the protected page with the cookie, and was refused.
    expect(world.site.counters().protected_denied).toBe(denied + 1);
    const ended = await stateBecomes(client, id, 'not_verified', 10_000);
    expect(await claimsOf(ended)).toMatchObject({ outcome: 'not_verified', profile_id: 'planted' });
    expect((await claimsOf(ended)).account_sha256).toBeUndefined();
  });

  test('a profile sealed to alice is account_mismatch when bob signs in; the seal lives next to the profile directory', async ({ world, client }) => {
    await signedIn(client, world, 'sealed', 'alice');
    const seal = `${profileDir(world, 'sealed')}.seal.json`;
    await access(seal);
    expect(await readdir(profileDir(world, 'sealed'))).not.toContain('sealed.seal.json');

    world.site.expireSessions();
    const id = ceremonyId();
    expect(await begin(client, world, 'sealed', { id, generation: 2 })).toMatchObject({ state: 'awaiting_person' });
    await personSignsIn(world, 'sealed', 'bob');
    const mismatch = await stateBecomes(client, id, 'account_mismatch');
    expect(await claimsOf(mismatch)).toMatchObject({ outcome: 'account_mismatch', account_sha256: sha256('bob@example.test') });
    expect((await deliveredFor(world.receiver, id)).map((event) => event.outcome)).toEqual(['account_mismatch']);
  });

  test("begin interrupts the profile's live lease: its next page.act and page.observe fail lease_lost", async ({ world, client }) => {
    const lease = await acquire(client, 'interrupted', 60_000, undefined, [world.site.origin]);
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${world.site.origin}/public`, timeout_ms: 15_000 });
    const id = ceremonyId();
    await begin(client, world, 'interrupted', { id });
    const act = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'click', revision: page.revision, reference: 'e1' },
      timeout_ms: 5_000,
    });
    expect(act).toMatchObject({ error: { code: 'lease_lost' } });
    expect(await client.request('page.observe', { lease_id: lease.lease_id, timeout_ms: 5_000 })).toMatchObject({ error: { code: 'lease_lost' } });
    expect(await client.call('ceremony.end', { ceremony_id: id })).toEqual({ ended: true });
  });

  test('a newer generation ends the older ceremony; a stale one is ended at once; a known id answers its state', async ({ world, client }) => {
    const older = ceremonyId();
    const newer = ceremonyId();
    expect(await begin(client, world, 'generations', { id: older, generation: 4 })).toMatchObject({ state: 'awaiting_person' });
    expect(await begin(client, world, 'generations', { id: newer, generation: 5 })).toMatchObject({ state: 'awaiting_person' });
    const ended = await client.call('ceremony.status', { ceremony_id: older });
    expect(ended.state).toBe('ended');
    expect(await claimsOf(ended)).toMatchObject({ outcome: 'ended', generation: 4 });
    // Beginning the same ceremony again answers its current state; it starts nothing.
    expect(await begin(client, world, 'generations', { id: newer, generation: 5 })).toEqual({ ceremony_id: newer, state: 'awaiting_person' });
    expect(
      await client.request('ceremony.begin', {
        ceremony_id: newer,
        profile_id: 'someone-else',
        origin: world.site.origin,
        generation: 5,
        sign_in_url: `${world.site.origin}/signin`,
        protected_url: `${world.site.origin}/reports`,
        timeout_ms: 30_000,
      }),
    ).toMatchObject({ error: { code: 'invalid_params' } });

    const stale = await begin(client, world, 'generations', { generation: 3 });
    expect(stale.state).toBe('ended');
    expect((await client.call('ceremony.status', { ceremony_id: newer })).state).toBe('awaiting_person');

    expect(await client.call('ceremony.end', { ceremony_id: newer })).toEqual({ ended: true });
    expect(await client.call('ceremony.end', { ceremony_id: newer })).toEqual({ ended: false });
    expect((await client.call('ceremony.status', { ceremony_id: newer })).state).toBe('ended');
    await vi.waitFor(async () => expect(await client.call('host.status', {})).toMatchObject({ ceremonies_open: 0 }), { timeout: 5_000 });
  });

  test('ceremony.status of an unknown id answers unknown, ceremony.end of it is false; a protected page of another origin is refused', async ({
    world,
    client,
  }) => {
    const id = ceremonyId();
    expect(await client.call('ceremony.status', { ceremony_id: id })).toEqual({ ceremony_id: id, state: 'unknown' });
    expect(await client.call('ceremony.end', { ceremony_id: id })).toEqual({ ended: false });
    // The sign-in page may be elsewhere (an identity provider); the page that proves it may not.
    const elsewhere = await client.request('ceremony.begin', {
      ceremony_id: id,
      profile_id: 'elsewhere',
      origin: world.site.origin,
      generation: 1,
      sign_in_url: `${world.site.origin}/signin`,
      protected_url: 'https://example.test/reports',
      timeout_ms: 30_000,
    });
    expect(elsewhere).toMatchObject({ error: { code: 'invalid_params' } });
    expect(await client.call('ceremony.status', { ceremony_id: id })).toEqual({ ceremony_id: id, state: 'unknown' });
    const viaProvider = ceremonyId();
    const accepted = await client.call('ceremony.begin', {
      ceremony_id: viaProvider,
      profile_id: 'via-provider',
      origin: world.site.origin,
      generation: 1,
      sign_in_url: 'http://127.0.0.1:9/identity-provider/login',
      protected_url: `${world.site.origin}/reports`,
      timeout_ms: 30_000,
    });
    expect(accepted).toEqual({ ceremony_id: viaProvider, state: 'awaiting_person' });
    expect(await client.call('ceremony.end', { ceremony_id: viaProvider })).toEqual({ ended: true });
  });
});

describe('host shutdown', () => {
  test('closing a host with a ceremony waiting for a person ends it without delivering anything and leaves no browser behind', async ({ world }) => {
    const profiles = await temporaryDirectory('host-shutdown-');
    try {
      const host = await startBrowserHost(
        testHostConfig(profiles.dir, { siteDefinitions: [accountSiteDefinition(world.site.origin)], edgeUrl: world.receiver.url, ceremonyPollMs: 200 }),
      );
      const client = await connectHost(host.url, TEST_SECRET);
      const id = ceremonyId();
      expect(await begin(client, { ...world, host, profilesDir: profiles.dir }, 'shutdown', { id })).toMatchObject({ state: 'awaiting_person' });
      expect(host.status()).toMatchObject({ ceremonies_open: 1, browsers: 1 });
      const started = Date.now();
      await host.close();
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(host.status()).toMatchObject({ ceremonies_open: 0, browsers: 0, verification_loads: 0 });
      await client.close();
      expect(world.receiver.events().some((event) => event.ceremony_id === id)).toBe(false);
    } finally {
      await profiles.remove();
    }
  });
});
