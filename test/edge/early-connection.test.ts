import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import { type HostConnector, type HostSession, HostUnreachable } from '../../edge/host/host-session.ts';
import { partiesForEachTest, poster, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';

// The host's connection for a call opens while the call is being recorded (issue 35:
// edge/fleet/early-connection.ts), not after: one connection per dispatched call, its command sent
// only once the call is on record as dispatching, and a call refused at that moment sends nothing
// and leaves no connection open.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8127';

interface Opened {
  readonly commands: string[];
  closed: boolean;
}

function stack() {
  let revision = 0;
  const opened: Opened[] = [];
  const recordedWhenSent: string[] = [];
  let holdObserve: Promise<void> | undefined;
  const host = scriptedHost(async (method, params) => {
    if (method === 'lease.acquire' || method === 'lease.renew') {
      return { lease_id: 'lease_early0000001', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
    }
    if (method === 'page.observe' || method === 'page.navigate' || method === 'page.act') {
      // What the database says of the run's calls at the moment the command reaches the host.
      const row = await env.DB.prepare("select state from tool_calls where state = 'dispatching'").first<{ state: string }>();
      recordedWhenSent.push(row?.state ?? 'nothing recorded');
      if (method === 'page.observe' && holdObserve !== undefined) await holdObserve;
      return { ...hostPage(`${ORIGIN}/page`, ++revision), snapshot: '- button "Go" [ref=e2]' };
    }
    return { released: true };
  });
  // Each session the edge opens, what it sent on it and whether it was closed.
  const counting: HostConnector = {
    async connect(timeoutMs) {
      const session = await host.connector.connect(timeoutMs);
      const record: Opened = { commands: [], closed: false };
      opened.push(record);
      return {
        hostId: session.hostId,
        call: (method: string, params: unknown, timeout?: number) => {
          record.commands.push(method);
          return (session.call as (m: string, p: unknown, t?: number) => Promise<unknown>)(method, params, timeout);
        },
        close: () => {
          record.closed = true;
          session.close();
        },
        onTimings: () => {},
      } as unknown as HostSession;
    },
  };
  const app = createApp(() => workerdPorts(counting));
  const post = poster(app);
  return { post, opened, recordedWhenSent, hold: (until: Promise<void>) => (holdObserve = until) };
}

describe('the connection opened while a call is recorded', () => {
  it('is the one connection a dispatched call uses, and its command goes out only once the call is on record', async () => {
    const { post, opened, recordedWhenSent } = stack();
    const run = await post('/v1/runs', parties.owner.token, { profile_id: 'early', intent: 'connect early', origins: [ORIGIN] });
    const propose = (tool: string, args: unknown) =>
      post(`/v1/runs/${run.body.id}/tool-calls`, parties.agent.token, { tool, version: '1.4.0', arguments: args });
    expect((await propose('browser.navigate', { url: `${ORIGIN}/page` })).status).toBe(200);

    const before = opened.length;
    expect(await propose('browser.observe', {})).toMatchObject({ status: 200, body: { state: 'succeeded' } });
    const sessions = opened.slice(before);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({ commands: ['lease.renew', 'page.observe'], closed: true });
    expect(recordedWhenSent).toEqual(['dispatching', 'dispatching']);
  });

  it('is closed with nothing sent when the call is refused as it is recorded (another call of the run is in progress)', async () => {
    const { post, opened, hold } = stack();
    const run = await post('/v1/runs', parties.owner.token, { profile_id: 'early-refused', intent: 'connect early', origins: [ORIGIN] });
    const propose = () => post(`/v1/runs/${run.body.id}/tool-calls`, parties.agent.token, { tool: 'browser.observe', version: '1.4.0', arguments: {} });
    expect(
      (
        await post(`/v1/runs/${run.body.id}/tool-calls`, parties.agent.token, {
          tool: 'browser.navigate',
          version: '1.4.0',
          arguments: { url: `${ORIGIN}/page` },
        })
      ).status,
    ).toBe(200);

    let release!: () => void;
    hold(
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    const first = propose();
    // The first observe is at the host, its call dispatching: a second one is refused at its record.
    await expect.poll(() => opened.some((session) => session.commands.includes('page.observe'))).toBe(true);
    const before = opened.length;
    const second = await propose();
    expect(second).toMatchObject({ status: 409, body: { error: { code: 'call_in_progress' } } });
    release();
    expect(await first).toMatchObject({ status: 200 });
    const refused = opened.slice(before).filter((session) => !session.commands.includes('page.observe'));
    expect(refused.length).toBeGreaterThan(0);
    await expect.poll(() => refused.every((session) => session.closed)).toBe(true);
    for (const session of refused) expect(session.commands).toEqual([]);
  });

  it("that fails counts as the first of the host's two connection attempts, never a third", async () => {
    let revision = 0;
    const host = scriptedHost(async (method, params) => {
      if (method === 'lease.acquire' || method === 'lease.renew') {
        return { lease_id: 'lease_early0000002', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
      }
      if (method.startsWith('page.')) return { ...hostPage(`${ORIGIN}/page`, ++revision), snapshot: '- button "Go" [ref=e2]' };
      return { released: true };
    });
    const down = new Set<string>();
    const attempts: string[] = [];
    const ports = workerdPorts(host.connector);
    const app = createApp(() => ({
      ...ports,
      dial: (url: string): HostConnector => ({
        async connect(timeoutMs) {
          attempts.push(url);
          if (down.has(url)) throw new HostUnreachable(`cannot reach ${url}`);
          return host.connector.connect(timeoutMs);
        },
      }),
    }));
    const post = poster(app);
    const run = await post('/v1/runs', parties.owner.token, { profile_id: 'early-down', intent: 'connect early', origins: [ORIGIN] });
    const propose = (tool: string, args: unknown) =>
      post(`/v1/runs/${run.body.id}/tool-calls`, parties.agent.token, { tool, version: '1.4.0', arguments: args });
    expect((await propose('browser.navigate', { url: `${ORIGIN}/page` })).status).toBe(200);
    const leaseHost = attempts.at(-1) as string;

    down.add(leaseHost);
    attempts.length = 0;
    await propose('browser.observe', {});
    expect(attempts.filter((url) => url === leaseHost)).toHaveLength(2);
  });
});
