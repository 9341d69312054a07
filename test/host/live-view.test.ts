import { describe, expect } from 'vitest';
import { FRAMES_IN_FLIGHT, type LiveViewNotification, type ViewFrame, type ViewInputEvent } from '../../shared/live-view.ts';
import { begin, ceremonyId, ceremonyTest, stateBecomes } from '../support/ceremony-fixture.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { TEST_SECRET } from '../support/host-fixture.ts';
import { until } from '../support/until.ts';

// Live views of sign-in ceremonies on the host's wire, in real Chromium: the frames of
// the ceremony's page, the person's input through the view, and the bound on what a viewer that
// stops reading can cost.

const test = ceremonyTest('fixture');

/** Collects a connection's live-view notifications. */
function notificationsOf(client: HostClient) {
  const frames: ViewFrame[] = [];
  const ended: Extract<LiveViewNotification, { method: 'liveview.ended' }>['params'][] = [];
  client.onNotification((notification) => {
    if (notification.method === 'liveview.frame') frames.push(notification.params);
    else if (notification.method === 'liveview.ended') ended.push(notification.params);
  });
  return { frames, ended };
}

/** The key presses that type `text` (one down and up per character). */
function typed(text: string): ViewInputEvent[] {
  return [...text].flatMap((key) => [
    { type: 'key', action: 'down', key },
    { type: 'key', action: 'up', key },
  ]);
}

const press = (key: string): ViewInputEvent[] => [
  { type: 'key', action: 'down', key },
  { type: 'key', action: 'up', key },
];

describe('live views of a sign-in ceremony', () => {
  test('stream the sign-in page scaled to the viewer and carry the person’s typing; the view ends with the verified ceremony', async ({ world, client }) => {
    const id = ceremonyId();
    expect(await begin(client, world, 'live-alice', { id })).toMatchObject({ state: 'awaiting_person' });
    const seen = notificationsOf(client);
    const { view_id } = await client.call('liveview.open', {
      ceremony_id: id,
      profile_id: 'live-alice',
      origin: world.site.origin,
      generation: 1,
      max_width: 640,
      max_height: 480,
    });
    const first = await until(() => seen.frames[0], 'the first frame');
    expect(first.view_id).toBe(view_id);
    expect(first.width).toBeLessThanOrEqual(640);
    expect(first.height).toBeLessThanOrEqual(480);
    expect(Buffer.from(first.jpeg_base64, 'base64').subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    // The site's form focuses Username; the person types, tabs to Password, types and submits.
    const input = (events: ViewInputEvent[]) => client.call('liveview.input', { view_id, ack: seen.frames.at(-1)?.seq, frame_seq: first.seq, events });
    expect((await input(typed('alice'))).applied).toBe(10);
    await input([...press('Tab'), ...typed('alice-pass'), ...press('Enter')]);
    await stateBecomes(client, id, 'verified');
    expect(await until(() => seen.ended[0], 'the end of the view')).toEqual({ view_id, reason: 'verified' });
    expect(world.site.counters().sign_ins).toBeGreaterThanOrEqual(1);
    expect(await client.request('liveview.input', { view_id, events: typed('x') })).toMatchObject({ error: { code: 'not_found' } });
  });

  test('a viewer that stops acknowledging gets two frames and no more, however much the page changes; an acknowledgement lets the newest through', async ({
    world,
    client,
  }) => {
    const id = ceremonyId();
    await begin(client, world, 'live-slow', { id });
    const seen = notificationsOf(client);
    const { view_id } = await client.call('liveview.open', {
      ceremony_id: id,
      profile_id: 'live-slow',
      origin: world.site.origin,
      generation: 1,
      max_width: 800,
      max_height: 600,
    });
    await until(() => seen.frames[0], 'the first frame');
    // Each character typed changes the page, so Chromium has new frames to give all along.
    for (let round = 0; round < 10; round++) await client.call('liveview.input', { view_id, events: typed('abcdefghij') });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(seen.frames).toHaveLength(FRAMES_IN_FLIGHT);
    await client.call('liveview.input', { view_id, ack: seen.frames[1]!.seq, events: [] });
    await until(() => seen.frames[FRAMES_IN_FLIGHT], 'the frame held for the viewer');
    // Room for two more at most (the caret's blinking gives Chromium new frames all along).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(seen.frames.length).toBeLessThanOrEqual(2 * FRAMES_IN_FLIGHT);
    expect(seen.frames.map((frame) => frame.seq)).toEqual(seen.frames.map((_, index) => index + 1));
    await client.call('liveview.close', { view_id });
    expect(await until(() => seen.ended[0], 'the end of the view')).toEqual({ view_id, reason: 'closed' });
  });

  test('opens only for an open ceremony of that profile, origin and generation, and ends when the ceremony is ended', async ({ world, client }) => {
    const id = ceremonyId();
    await begin(client, world, 'live-fenced', { id, generation: 2 });
    const open = (generation: number, profile = 'live-fenced') =>
      client.request('liveview.open', { ceremony_id: id, profile_id: profile, origin: world.site.origin, generation, max_width: 800, max_height: 600 });
    expect(await open(1)).toMatchObject({ error: { code: 'not_found' } });
    expect(await open(2, 'someone-else')).toMatchObject({ error: { code: 'not_found' } });
    const seen = notificationsOf(client);
    const opened = await open(2);
    expect(opened).toMatchObject({ result: { view_id: expect.stringMatching(/^view_/) } });
    const viewId = (opened as { result: { view_id: string } }).result.view_id;
    // Input aimed outside the frame it names is dropped.
    const frame = await until(() => seen.frames[0], 'the first frame');
    const outside = await client.call('liveview.input', {
      view_id: viewId,
      frame_seq: frame.seq,
      events: [{ type: 'mouse', action: 'down', x: frame.width + 10, y: 5, button: 'left', click_count: 1 }],
    });
    expect(outside.applied).toBe(0);
    await client.call('ceremony.end', { ceremony_id: id });
    expect(await until(() => seen.ended[0], 'the end of the view')).toEqual({ view_id: viewId, reason: 'ended' });
    expect(await open(2)).toMatchObject({ error: { code: 'not_found' } });
  });

  test('two views opened at once: the one opened last stays, the other is told it ended', async ({ world, client }) => {
    const id = ceremonyId();
    await begin(client, world, 'live-twice', { id });
    const other = await connectHost(world.host.url, TEST_SECRET);
    try {
      const seen = [notificationsOf(client), notificationsOf(other)];
      const params = { ceremony_id: id, profile_id: 'live-twice', origin: world.site.origin, generation: 1, max_width: 800, max_height: 600 };
      const opened = await Promise.all([client.call('liveview.open', params), other.call('liveview.open', params)]);
      await until(() => seen[0]!.ended.length + seen[1]!.ended.length === 1, 'one of the two views to end');
      const survivor = seen[0]!.ended.length === 0 ? 0 : 1;
      expect(seen[1 - survivor]!.ended).toEqual([{ view_id: opened[1 - survivor]!.view_id, reason: 'ended' }]);
      expect(await (survivor === 0 ? client : other).call('liveview.input', { view_id: opened[survivor]!.view_id, events: [] })).toEqual({ applied: 0 });
      expect(await (survivor === 0 ? other : client).request('liveview.input', { view_id: opened[1 - survivor]!.view_id, events: [] })).toMatchObject({
        error: { code: 'not_found' },
      });
    } finally {
      await other.close();
    }
  });

  test('keys and buttons a view still holds when it ends are released: the next view types as typed', async ({ world, client }) => {
    const id = ceremonyId();
    await begin(client, world, 'live-held', { id });
    const open = () =>
      client.call('liveview.open', { ceremony_id: id, profile_id: 'live-held', origin: world.site.origin, generation: 1, max_width: 800, max_height: 600 });
    const first = await open();
    await client.call('liveview.input', { view_id: first.view_id, events: [{ type: 'key', action: 'down', key: 'Shift' }] });
    // The viewer went away with Shift still down.
    await client.call('liveview.close', { view_id: first.view_id });
    const second = await open();
    await client.call('liveview.input', { view_id: second.view_id, events: [...typed('alice'), ...press('Tab'), ...typed('alice-pass'), ...press('Enter')] });
    await stateBecomes(client, id, 'verified');
  });
});
