import { env } from 'cloudflare:test';
import { upgradeWebSocket } from 'hono/cloudflare-workers';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import type { Ports } from '../../edge/ports.ts';
import { LIVE_VIEW_LINK_MS, LIVE_VIEW_RECORD_MS, removeOldLiveViewLinks } from '../../edge/sign-in/live-view.ts';
import { partiesForEachTest, workerdPorts } from './support/edge-client.ts';
import { signInFixture } from './support/sign-in-fixture.ts';

// Live-view links on the Workers app over the real D1: single use, bound to one console session
// and one ceremony generation, 5 minutes to connect, only from the console's own origin. The host is the bindings' closed port, so a view that connects ends `unavailable`.

const parties = partiesForEachTest();
const fixture = signInFixture(parties);
const EDGE = 'http://127.0.0.1:8787';

function liveApp() {
  let skewMs = 0;
  const app = createApp((): Ports => {
    const ports = workerdPorts();
    return { ...ports, upgradeWebSocket, clock: { ...ports.clock, now: () => Date.now() + skewMs } };
  });
  const request = (method: string, path: string, init: { cookie?: string; form?: Record<string, string>; socket?: { origin: string } } = {}) =>
    app.request(`${EDGE}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        ...(init.cookie ? { Cookie: init.cookie } : {}),
        ...(init.form ? { 'Content-Type': 'application/x-www-form-urlencoded', Origin: EDGE } : {}),
        ...(init.socket ? { Upgrade: 'websocket', Origin: init.socket.origin } : {}),
      },
      ...(init.form ? { body: new URLSearchParams(init.form).toString() } : {}),
    });
  return { request, skew: (ms: number) => (skewMs = ms) };
}

async function session(app: ReturnType<typeof liveApp>, token: string): Promise<{ cookie: string; csrf: string }> {
  const answer = await app.request('POST', '/console/sign-in', { form: { token } });
  expect(answer.status).toBe(303);
  const cookie = (answer.headers.get('Set-Cookie') ?? '').split(';')[0]!;
  const page = await (await app.request('GET', '/console/sign-ins', { cookie })).text();
  return { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(page)![1]! };
}

/** A run parked on a sign-in, and a live-view link the owner's session opened for its episode. */
async function linkForOpenSignIn(app: ReturnType<typeof liveApp>) {
  const run = await fixture.runningRun();
  await fixture.hitSignInWall(run);
  const episode = await fixture.openEpisode();
  const owner = await session(app, parties.owner.token);
  const sign = await (await app.request('GET', '/console/sign-ins', { cookie: owner.cookie })).text();
  expect(sign).toContain(`/console/sign-ins/${episode.id}/live-view`);
  const minted = await app.request('POST', `/console/sign-ins/${episode.id}/live-view`, { cookie: owner.cookie, form: { csrf: owner.csrf } });
  expect(minted.status).toBe(303);
  const page = minted.headers.get('Location')!;
  expect(page).toMatch(/^\/console\/live\/[\w-]+\.[\w-]+\.[\w-]+$/);
  return { owner, episode, page, socket: `${page}/socket` };
}

/** The first message the view's socket sends, as JSON. */
async function firstMessage(response: Response): Promise<Record<string, unknown>> {
  const socket = (response as unknown as { webSocket: WebSocket & { accept(): void } }).webSocket;
  socket.accept();
  const message = new Promise<string>((resolve) => socket.addEventListener('message', (event) => resolve(String(event.data)), { once: true }));
  socket.send(JSON.stringify({ type: 'hello' }));
  return JSON.parse(await message) as Record<string, unknown>;
}

describe('live-view links', () => {
  it('open the view once, for the session they were issued to; a second connection is refused', async () => {
    const app = liveApp();
    const { owner, page, socket } = await linkForOpenSignIn(app);
    const shown = await app.request('GET', page, { cookie: owner.cookie });
    expect(shown.status).toBe(200);
    expect(await shown.text()).toContain(`data-socket="${socket}"`);
    const first = await app.request('GET', socket, { cookie: owner.cookie, socket: { origin: EDGE } });
    expect(first.status).toBe(101);
    // No host is reachable here: the relay says so and ends the view.
    expect(await firstMessage(first)).toMatchObject({ type: 'ended', reason: 'unavailable' });
    const again = await app.request('GET', socket, { cookie: owner.cookie, socket: { origin: EDGE } });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ error: { code: 'already_decided' } });
  });

  it("give another owner's session, another session of the same owner, and no session nothing", async () => {
    const app = liveApp();
    const { page, socket, episode } = await linkForOpenSignIn(app);
    const stranger = await session(app, parties.strangerOwner.token);
    const sameOwnerElsewhere = await session(app, parties.owner.token);
    for (const cookie of [stranger.cookie, sameOwnerElsewhere.cookie]) {
      expect((await app.request('GET', page, { cookie })).status).toBe(404);
      expect((await app.request('GET', socket, { cookie, socket: { origin: EDGE } })).status).toBe(404);
    }
    expect((await app.request('GET', socket, { socket: { origin: EDGE } })).status).toBe(303);
    const rows = await env.DB.prepare('SELECT used_at FROM live_views WHERE episode_id = ?').bind(episode.id).all<{ used_at: number | null }>();
    expect(rows.results.map((row) => row.used_at)).toEqual([null]);
  });

  it('refuse to connect after their 5 minutes, once the sign-in was restarted, or from a page of another origin', async () => {
    const app = liveApp();
    const { owner, episode, socket } = await linkForOpenSignIn(app);
    expect((await app.request('GET', socket, { cookie: owner.cookie, socket: { origin: 'http://evil.example' } })).status).toBe(403);
    app.skew(LIVE_VIEW_LINK_MS + 1_000);
    expect((await app.request('GET', socket, { cookie: owner.cookie, socket: { origin: EDGE } })).status).toBe(404);
    app.skew(0);
    await env.DB.prepare('UPDATE sign_in_episodes SET generation = generation + 1 WHERE id = ?').bind(episode.id).run();
    const restarted = await app.request('GET', socket, { cookie: owner.cookie, socket: { origin: EDGE } });
    expect(restarted.status).toBe(409);
    expect(await restarted.json()).toMatchObject({ error: { code: 'run_not_active' } });
  });

  it("are issued only for the owner's own open sign-ins", async () => {
    const app = liveApp();
    const { episode } = await linkForOpenSignIn(app);
    const stranger = await session(app, parties.strangerOwner.token);
    const refused = await app.request('POST', `/console/sign-ins/${episode.id}/live-view`, { cookie: stranger.cookie, form: { csrf: stranger.csrf } });
    expect(refused.status).toBe(303);
    expect(decodeURIComponent(refused.headers.get('Location') ?? '')).toContain('Not done: no open sign-in of yours with that id');
  });

  it('are forgotten by the cron pass a day after they expired, and not before', async () => {
    const app = liveApp();
    const { episode } = await linkForOpenSignIn(app);
    const count = async () => (await env.DB.prepare('SELECT count(*) AS n FROM live_views WHERE episode_id = ?').bind(episode.id).first<{ n: number }>())?.n;
    expect(await removeOldLiveViewLinks(workerdPorts(), Date.now() + LIVE_VIEW_LINK_MS + 60_000)).toBe(0);
    expect(await count()).toBe(1);
    expect(await removeOldLiveViewLinks(workerdPorts(), Date.now() + LIVE_VIEW_LINK_MS + LIVE_VIEW_RECORD_MS + 60_000)).toBeGreaterThanOrEqual(1);
    expect(await count()).toBe(0);
  });
});
