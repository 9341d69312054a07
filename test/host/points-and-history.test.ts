import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import { startFixtureServer } from '../support/fixture-server.ts';
import { acquire, hostTest } from '../support/host-fixture.ts';

const test = hostTest();

// Positions come from test/fixtures/points/page.html (absolutely placed, viewport CSS px).
const SAVE_CENTRE = { x: 160, y: 120 };
const EMAIL_LABEL_TEXT = { x: 110, y: 210 };
const PROSE = { x: 150, y: 310 };
const CARD_TEXT = { x: 640, y: 130 };
const NESTED_LINK_TEXT = { x: 610, y: 310 };
// The iframe's content box starts at 100 + 4 (border) + 6 (padding) = 110 across, 400 + 10 = 410 down;
// its button sits at 50,60 (100 x 30) of the frame's viewport.
const FRAME_PAY = { x: 110 + 50 + 40, y: 410 + 60 + 10 };

describe('page.hit_test: a point of the screenshot to a reference', () => {
  test('maps a button, a label, a role and nested content to the reference an agent would act on', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('points/page.html'), timeout_ms: 20_000 });
    const at = async (point: { x: number; y: number }) =>
      (await client.call('page.hit_test', { lease_id: lease.lease_id, revision: page.revision, point, timeout_ms: 10_000 })).reference;
    expect(await at(SAVE_CENTRE)).toBe(refOf(page.snapshot, 'button', 'Save draft'));
    // A label's text stands for its control.
    expect(await at(EMAIL_LABEL_TEXT)).toBe(refOf(page.snapshot, 'textbox', 'Email'));
    // A span inside an element with an interactive role: the element.
    expect(await at(CARD_TEXT)).toBe(refOf(page.snapshot, 'link', 'Open card'));
    // Bold text inside a span inside a link: the link.
    expect(await at(NESTED_LINK_TEXT)).toBe(refOf(page.snapshot, 'link', 'Read more'));
    // Nothing was sent: the button's effect never happened.
    expect(fixtures.hits('save')).toBe(0);
  });

  test('a page that replaces its own hit-testing cannot steer a point to another element', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('points/page.html?tamper'), timeout_ms: 20_000 });
    const at = async (point: { x: number; y: number }) =>
      (await client.call('page.hit_test', { lease_id: lease.lease_id, revision: page.revision, point, timeout_ms: 10_000 })).reference;
    expect(await at(SAVE_CENTRE)).toBe(refOf(page.snapshot, 'button', 'Save draft'));
    expect(await at(EMAIL_LABEL_TEXT)).toBe(refOf(page.snapshot, 'textbox', 'Email'));
    expect(await at(NESTED_LINK_TEXT)).toBe(refOf(page.snapshot, 'link', 'Read more'));
  });

  test('descends into a same-origin iframe with the point translated into it', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('points/page.html'), timeout_ms: 20_000 });
    const { reference } = await client.call('page.hit_test', { lease_id: lease.lease_id, revision: page.revision, point: FRAME_PAY, timeout_ms: 10_000 });
    expect(reference).toBe(refOf(page.snapshot, 'button', 'Pay now'));
    expect(reference).toMatch(/^f\d+e\d+$/);
    // The reference acts like any other.
    await client.call('page.act', { lease_id: lease.lease_id, action: { action: 'click', revision: page.revision, reference }, timeout_ms: 20_000 });
    expect(fixtures.hits('frame-pay')).toBe(1);
  });

  test('a point on an iframe of another origin stands for that iframe, never for what is inside it', async ({ client, fixtures }) => {
    const other = await startFixtureServer();
    try {
      const lease = await acquire(client, 'foreign-frame', 60_000, undefined, [fixtures.origin, other.origin]);
      try {
        const url = `${fixtures.url('points/foreign.html')}?src=${encodeURIComponent(other.url('points/frame.html'))}`;
        const page = await client.call('page.navigate', { lease_id: lease.lease_id, url, timeout_ms: 20_000 });
        const frame = page.frames?.find((candidate) => candidate.origin === other.origin);
        expect(frame).toBeDefined();
        // The frame's button is at 50,60 of the frame, which is at 100,100 of the page.
        const point = { x: 100 + 50 + 40, y: 100 + 60 + 10 };
        const { reference } = await client.call('page.hit_test', { lease_id: lease.lease_id, revision: page.revision, point, timeout_ms: 10_000 });
        expect(reference).toBe(frame?.reference);
      } finally {
        await client.call('lease.release', { lease_id: lease.lease_id });
      }
    } finally {
      await other.close();
    }
  });

  test('a point on nothing actionable, or outside the viewport, is invalid_params', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('points/page.html'), timeout_ms: 20_000 });
    const ask = (point: { x: number; y: number }) =>
      client.request('page.hit_test', { lease_id: lease.lease_id, revision: page.revision, point, timeout_ms: 10_000 });
    expect(await ask(PROSE)).toMatchObject({ error: { code: 'invalid_params', message: expect.stringMatching(/nothing actionable/) } });
    expect(await ask({ x: 1280, y: 10 })).toMatchObject({ error: { code: 'invalid_params', message: expect.stringMatching(/outside the viewport/) } });
    expect(await ask({ x: 10, y: 5000 })).toMatchObject({ error: { code: 'invalid_params', message: expect.stringMatching(/outside the viewport/) } });
  });

  test('a revision that is not the latest is stale_revision', async ({ client, lease, fixtures }) => {
    const page = await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url('points/page.html'), timeout_ms: 20_000 });
    const later = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 10_000 });
    expect(later.revision).toBeGreaterThan(page.revision);
    const stale = await client.request('page.hit_test', { lease_id: lease.lease_id, revision: page.revision, point: SAVE_CENTRE, timeout_ms: 10_000 });
    expect(stale).toMatchObject({ error: { code: 'stale_revision' } });
  });
});

describe('page.history and history moves', () => {
  test('back, forward and reload land where page.history said, and only there', async ({ client, lease, fixtures }) => {
    const first = fixtures.url('points/page.html');
    const second = fixtures.url('button.html');
    const history = async (move: 'back' | 'forward' | 'reload') =>
      (await client.call('page.history', { lease_id: lease.lease_id, history: move, timeout_ms: 10_000 })).url;
    await client.call('page.navigate', { lease_id: lease.lease_id, url: first, timeout_ms: 20_000 });
    await client.call('page.navigate', { lease_id: lease.lease_id, url: second, timeout_ms: 20_000 });
    expect(await history('forward')).toBeNull();
    expect(await history('reload')).toBe(second);
    expect(await history('back')).toBe(first);

    // A landing entry other than the one decided on moves nothing.
    const mismatch = await client.request('page.navigate', { lease_id: lease.lease_id, history: 'back', expected_url: second, timeout_ms: 20_000 });
    expect(mismatch).toMatchObject({ error: { code: 'target_changed' } });
    expect(await history('reload')).toBe(second);

    const back = await client.call('page.navigate', { lease_id: lease.lease_id, history: 'back', expected_url: first, timeout_ms: 20_000 });
    expect(back.url).toBe(first);
    expect(back.title).toBe('Points');
    expect(await history('forward')).toBe(second);
    const forward = await client.call('page.navigate', { lease_id: lease.lease_id, history: 'forward', expected_url: second, timeout_ms: 20_000 });
    expect(forward.url).toBe(second);
    expect(forward.revision).toBeGreaterThan(back.revision);
    const reload = await client.call('page.navigate', { lease_id: lease.lease_id, history: 'reload', expected_url: second, timeout_ms: 20_000 });
    expect(reload.url).toBe(second);
    expect(reload.revision).toBeGreaterThan(forward.revision);
  });

  test("a move back into an origin outside the lease's origins is refused and the page stays", async ({ client, fixtures }) => {
    const other = await startFixtureServer();
    try {
      const both = await acquire(client, 'history-origins', 60_000, undefined, [other.origin, fixtures.origin]);
      const away = other.url('points/page.html');
      const home = fixtures.url('button.html');
      await client.call('page.navigate', { lease_id: both.lease_id, url: away, timeout_ms: 20_000 });
      await client.call('page.navigate', { lease_id: both.lease_id, url: home, timeout_ms: 20_000 });
      await client.call('lease.release', { lease_id: both.lease_id });
      // The next run may only use the fixture origin; the tab's history still holds the other one.
      const lease = await acquire(client, 'history-origins', 60_000, undefined, [fixtures.origin]);
      try {
        const history = async () => (await client.call('page.history', { lease_id: lease.lease_id, history: 'back', timeout_ms: 10_000 })).url;
        // The lease began on about:blank: back is the last run's page of this origin.
        const returned = await client.call('page.navigate', { lease_id: lease.lease_id, history: 'back', expected_url: home, timeout_ms: 20_000 });
        expect(returned.url).toBe(home);
        expect(await history()).toBe(away);
        const refused = await client.request('page.navigate', { lease_id: lease.lease_id, history: 'back', expected_url: away, timeout_ms: 20_000 });
        expect(refused).toMatchObject({ error: { code: 'outside_run_origins' } });
        const still = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 10_000 });
        expect(still.url).toBe(home);
        expect(await history()).toBe(away);
      } finally {
        await client.call('lease.release', { lease_id: lease.lease_id });
      }
    } finally {
      await other.close();
    }
  });
});
