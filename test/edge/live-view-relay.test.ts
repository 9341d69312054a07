import { describe, expect, it } from 'vitest';
import type { HostConnector, HostSession } from '../../edge/host/host-session.ts';
import type { Ports } from '../../edge/ports.ts';
import { type LiveViewGrant, relayLiveView } from '../../edge/sign-in/live-view.ts';
import type { LiveViewNotification } from '../../shared/live-view.ts';
import { until } from '../support/until.ts';
import { workerdPorts } from './support/edge-client.ts';

// The live view's relay, the same code on every runtime, between a stand-in owner's page and a
// stand-in host session whose answers the test controls.

const GRANT: LiveViewGrant = {
  linkId: 'link-relay-test',
  episodeId: 'sie_relaytest',
  ceremonyId: 'cer_relaytest0001',
  hostProfileId: 'relay',
  origin: 'http://127.0.0.1:8123',
  generation: 1,
  ownerId: 'prn_relay',
};

/** A host session that answers `liveview.open` with `view_relay00001` (after `openDelayMs`) and every input after `inputDelayMs`. */
function standInHost(options: { openDelayMs?: number; inputDelayMs?: number; beforeOpenAnswer?: (notify: (n: LiveViewNotification) => void) => void } = {}) {
  const inputs: Array<{ ack?: number; events: unknown[] }> = [];
  let notify: (notification: LiveViewNotification) => void = () => {};
  const session = {
    onNotification: (listener: (notification: LiveViewNotification) => void) => {
      notify = listener;
    },
    onClose: () => {},
    close: () => {},
    call: async (method: string, params: Record<string, unknown>) => {
      if (method === 'liveview.open') {
        options.beforeOpenAnswer?.((notification) => notify(notification));
        await new Promise((resolve) => setTimeout(resolve, options.openDelayMs ?? 0));
        return { view_id: 'view_relay00001' };
      }
      if (method === 'liveview.input') {
        inputs.push(params as { ack?: number; events: unknown[] });
        await new Promise((resolve) => setTimeout(resolve, options.inputDelayMs ?? 0));
        return { applied: (params.events as unknown[]).length };
      }
      return { closed: true };
    },
  };
  const connector: HostConnector = { connect: async () => session as unknown as HostSession };
  return { connector, inputs, notify: (notification: LiveViewNotification) => notify(notification) };
}

function viewer() {
  const received: Array<Record<string, unknown>> = [];
  return { received, socket: { send: (text: string) => received.push(JSON.parse(text) as Record<string, unknown>), close: () => {} } };
}

const frame = (seq: number): LiveViewNotification => ({
  method: 'liveview.frame',
  params: { view_id: 'view_relay00001', seq, jpeg_base64: 'AAAA', width: 10, height: 10 },
});

describe('the live-view relay', () => {
  it('never drops an acknowledgement, however much input is waiting (else the host would send nothing more)', async () => {
    const host = standInHost({ inputDelayMs: 30 });
    const ports: Ports = { ...workerdPorts(host.connector) };
    const page = viewer();
    const relay = await relayLiveView(ports, GRANT, page.socket, 800, 600);
    const key = { type: 'key', action: 'down', key: 'a' };
    for (let burst = 0; burst < 60; burst++) relay.fromViewer(JSON.stringify({ type: 'input', frame_seq: 1, events: [key] }));
    relay.fromViewer(JSON.stringify({ type: 'ack', seq: 1 }));
    relay.fromViewer(JSON.stringify({ type: 'ack', seq: 2 }));
    await until(() => host.inputs.some((input) => input.ack === 2), 'the newest acknowledgement to reach the host', 5_000, 10);
    relay.viewerClosed();
  });

  it('loses no keystroke of a person typing faster than the host answers: waiting input goes on in order, in calls of at most 64 events', async () => {
    const host = standInHost({ inputDelayMs: 30 });
    const page = viewer();
    const relay = await relayLiveView({ ...workerdPorts(host.connector) }, GRANT, page.socket, 800, 600);
    // "alice", Tab, "alice-pass", Enter as the console sends them: one message per key down and up.
    const keys = [...'alice', 'Tab', ...'alice-pass', 'Enter'];
    const typed = keys.flatMap((key) => [
      { type: 'key', action: 'down', key },
      { type: 'key', action: 'up', key },
    ]);
    for (const event of typed) relay.fromViewer(JSON.stringify({ type: 'input', frame_seq: 1, events: [event] }));
    const calls = () => host.inputs.filter((input) => input.events.length > 0);
    await until(() => calls().flatMap((input) => input.events).length >= typed.length, 'every key event to reach the host', 5_000, 10);
    expect(calls().flatMap((input) => input.events)).toEqual(typed);
    expect(calls().length).toBeLessThan(typed.length / 4);
    relay.viewerClosed();
  });

  it('drops input past 1 024 waiting events instead of queueing it without bound, and keeps what it took in order', async () => {
    const host = standInHost({ inputDelayMs: 100 });
    const page = viewer();
    const relay = await relayLiveView({ ...workerdPorts(host.connector) }, GRANT, page.socket, 800, 600);
    const events = Array.from({ length: 1_200 }, (_, index) => ({ type: 'mouse', action: 'move', x: index % 800, y: 1 }));
    for (const event of events) relay.fromViewer(JSON.stringify({ type: 'input', frame_seq: 1, events: [event] }));
    const received = () => host.inputs.flatMap((input) => input.events as Array<{ x: number }>);
    await until(() => received().length >= 1_024, 'the waiting input to reach the host', 5_000, 10);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(received().length).toBeLessThanOrEqual(1_024 + 1);
    expect(received().map((event) => event.x)).toEqual(events.slice(0, received().length).map((event) => event.x));
    expect(Math.max(...host.inputs.map((input) => input.events.length))).toBeLessThanOrEqual(64);
    relay.viewerClosed();
  });

  it('keeps each waiting call to the frame it was aimed at: input for a newer frame starts a call of its own', async () => {
    const host = standInHost({ inputDelayMs: 30 });
    const page = viewer();
    const relay = await relayLiveView({ ...workerdPorts(host.connector) }, GRANT, page.socket, 800, 600);
    const click = (x: number) => ({ type: 'mouse', action: 'down', x, y: 5, button: 'left', click_count: 1 });
    relay.fromViewer(JSON.stringify({ type: 'input', frame_seq: 1, events: [click(1)] }));
    relay.fromViewer(JSON.stringify({ type: 'input', frame_seq: 1, events: [click(2)] }));
    relay.fromViewer(JSON.stringify({ type: 'input', frame_seq: 1, events: [click(3)] }));
    relay.fromViewer(JSON.stringify({ type: 'input', frame_seq: 2, events: [click(4)] }));
    await until(() => host.inputs.flatMap((input) => input.events).length >= 4, 'the four clicks to reach the host', 5_000, 10);
    const sent = host.inputs as Array<{ frame_seq?: number; events: Array<{ x: number }> }>;
    expect(sent.map((input) => [input.frame_seq, input.events.map((event) => event.x)])).toEqual([
      [1, [1]],
      [1, [2, 3]],
      [2, [4]],
    ]);
    relay.viewerClosed();
  });

  it('hands on frames the host sent before it answered the open, instead of dropping them (the host waits for their acknowledgements)', async () => {
    const host = standInHost({ openDelayMs: 50, beforeOpenAnswer: (notify) => setTimeout(() => notify(frame(1)), 10) });
    const page = viewer();
    const relay = await relayLiveView({ ...workerdPorts(host.connector) }, GRANT, page.socket, 800, 600);
    expect(page.received).toEqual([{ type: 'frame', seq: 1, jpeg_base64: 'AAAA', width: 10, height: 10 }]);
    host.notify(frame(2));
    expect(page.received.map((message) => message.seq)).toEqual([1, 2]);
    host.notify({ method: 'liveview.ended', params: { view_id: 'view_relay00001', reason: 'verified' } });
    expect(page.received.at(-1)).toMatchObject({ type: 'ended', reason: 'verified' });
    relay.viewerClosed();
  });
});
