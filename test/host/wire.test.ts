import { once } from 'node:events';
import { SignJWT } from 'jose';
import { chromium } from 'playwright-core';
import { describe, expect, vi } from 'vitest';
import WebSocket from 'ws';
import { BASE_CHROMIUM_ARGS } from '../../browser-host/profiles.ts';
import { MAX_CONNECTIONS_PER_PEER, MAX_PENDING_PER_PEER, PENDING_EVICTABLE_MS } from '../../browser-host/server.ts';
import { signCeremonyEvent, verifyCeremonyEvent } from '../../shared/authentication.ts';
import { MAX_FRAME_BYTES } from '../../shared/protocol.ts';
import { newWireNonce, verifyHostHello, wireDigest, withWireNonce } from '../../shared/wire-auth.ts';
import { connectHost } from '../support/host-client.ts';
import { hostTest, TEST_SECRET } from '../support/host-fixture.ts';

const test = hostTest();

/** A frame token signed with the right key, `claims` over what a valid one would say for `client`'s next frame. */
async function frameToken(claims: Record<string, unknown>, options: { audience?: string; issuer?: string; expires?: string } = {}) {
  return new SignJWT({ typ: 'wire-frame', ...claims })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(options.issuer ?? 'edge')
    .setAudience(options.audience ?? 'host-wire')
    .setJti(newWireNonce())
    .setIssuedAt()
    .setExpirationTime(options.expires ?? '60s')
    .sign(new TextEncoder().encode(TEST_SECRET));
}

/** Opens a raw socket to the host with a fresh nonce; resolves with it and the parsed hello. */
async function rawConnection(url: string) {
  const nonce = newWireNonce();
  const socket = new WebSocket(withWireNonce(url, nonce));
  const [data] = (await once(socket, 'message')) as [Buffer];
  return { socket, nonce, hello: JSON.parse(String(data)) as { params: { host_id: string; auth: string } } };
}

describe('the wire', () => {
  test('the hello signs the nonce the connection was opened with, the host id and a connection id', async ({ client }) => {
    // connectHost has verified the token against its nonce before returning.
    expect(client.hello.method).toBe('host.hello');
    expect(client.hello.params.host_id).toBe('host-test');
    expect(client.connectionId).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  test("a hello recorded on one connection does not verify for another connection's nonce", async ({ host }) => {
    const first = await rawConnection(host.url);
    const second = await rawConnection(host.url);
    expect(await verifyHostHello(TEST_SECRET, first.hello.params.auth, { nonce: first.nonce, hostId: 'host-test' })).toBeDefined();
    expect(await verifyHostHello(TEST_SECRET, first.hello.params.auth, { nonce: second.nonce, hostId: 'host-test' })).toBeUndefined();
    expect(await verifyHostHello(TEST_SECRET, first.hello.params.auth, { nonce: first.nonce, hostId: 'another-host' })).toBeUndefined();
    first.socket.close();
    second.socket.close();
  });

  test('an upgrade without a nonce is refused before any hello', async ({ host }) => {
    const socket = new WebSocket(host.url);
    const [error] = (await once(socket, 'error')) as [Error];
    expect(error.message).toContain('400');
  });

  test('a frame without a token, or with a bad one, is unauthorized and the connection keeps serving', async ({ client }) => {
    const missing = await client.request('host.status', {}, { kind: 'omitted' });
    expect(missing).toEqual({ id: null, error: { code: 'unauthorized_frame', message: expect.any(String) } });

    const forged = await client.request('host.status', {}, { kind: 'token', token: 'not-a-token' });
    expect(forged).toEqual({ id: null, error: { code: 'unauthorized_frame', message: expect.any(String) } });

    // The host's own hello token is of another type and audience and must not pass as the edge's.
    const reflected = await client.request('host.status', {}, { kind: 'token', token: client.hello.params.auth });
    expect(reflected).toMatchObject({ error: { code: 'unauthorized_frame' } });

    // Signed with the right key but never expiring, or expiring in 2100: not short-lived, refused.
    const key = new TextEncoder().encode(TEST_SECRET);
    const endless = await new SignJWT({ typ: 'wire-frame' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('edge')
      .setAudience('host-wire')
      .setIssuedAt()
      .sign(key);
    expect(await client.request('host.status', {}, { kind: 'token', token: endless })).toMatchObject({ error: { code: 'unauthorized_frame' } });
    const farFuture = await frameToken({ cid: client.connectionId }, { expires: '3000000h' });
    expect(await client.request('host.status', {}, { kind: 'token', token: farFuture })).toMatchObject({ error: { code: 'unauthorized_frame' } });

    const status = await client.call('host.status', {});
    expect(status).toEqual({
      host_id: 'host-test',
      browsers: 0,
      max_browsers: 3,
      leases: 0,
      waiting: 0,
      headless: true,
      observations_served: 0,
      recent_observations_ms: [],
      verification_loads: 0,
      ceremonies_open: 0,
      version: 'test',
      draining: false,
      snapshots_pending: 0,
    });
  });

  test('a captured frame is refused when replayed, when its token is put on another frame, and on another connection', async ({ host, client }) => {
    const captured = await client.signFrame('host.status', {});
    expect(await client.sendRaw(captured.text, captured.id)).toMatchObject({ id: captured.id, result: { host_id: 'host-test' } });
    // The same frame again on the same connection: its token was used.
    expect(await client.sendRaw(captured.text, captured.id)).toMatchObject({
      error: { code: 'unauthorized_frame', message: expect.stringContaining('already used') },
    });
    // Its token on another frame (another id, another method, other params): the digest differs.
    const token = captured.text.slice(0, captured.text.indexOf('\n'));
    for (const body of [
      { id: captured.id + 1000, method: 'host.status', params: {} },
      { id: captured.id, method: 'lease.release', params: { lease_id: 'lease_doesnotexist' } },
      { id: captured.id, method: 'host.status', params: { verbose: true } },
    ]) {
      expect(await client.sendRaw(`${token}\n${JSON.stringify(body)}`, captured.id)).toMatchObject({ error: { code: 'unauthorized_frame' } });
    }
    // A fresh frame signed for the first connection, sent on a second one: another connection id.
    const fresh = await client.signFrame('host.status', {});
    const other = await connectHost(host.url, TEST_SECRET);
    try {
      expect(await other.sendRaw(fresh.text, fresh.id)).toMatchObject({
        error: { code: 'unauthorized_frame', message: expect.stringContaining('this connection') },
      });
      expect(await other.call('host.status', {})).toMatchObject({ host_id: 'host-test' });
    } finally {
      await other.close();
    }
    // A valid token whose claims name another frame id than the body is refused too.
    const body = JSON.stringify({ id: 4242, method: 'host.status', params: {} });
    const mismatched = await frameToken({ cid: client.connectionId, fid: 4243, method: 'host.status', bd: await wireDigest(body) });
    expect(await client.sendRaw(`${mismatched}\n${body}`, 4243)).toMatchObject({ error: { code: 'unauthorized_frame' } });
  });

  test('a ceremony event token passes neither as a frame token nor as a hello', async ({ client }) => {
    const event = await signCeremonyEvent(TEST_SECRET, {
      event_id: 'cev_wiretest0001',
      ceremony_id: 'cer_wiretest0001',
      host_id: 'host-test',
      profile_id: 'p1',
      origin: 'http://127.0.0.1:8123',
      generation: 1,
      outcome: 'verified',
      method: 'differential',
      decided_at_ms: Date.now(),
    });
    expect(await client.request('host.status', {}, { kind: 'token', token: event })).toMatchObject({ error: { code: 'unauthorized_frame' } });
    expect(await verifyHostHello(TEST_SECRET, event, { nonce: newWireNonce(), hostId: 'host-test' })).toBeUndefined();
    expect(await verifyCeremonyEvent(TEST_SECRET, client.hello.params.auth)).toBeUndefined();
  });

  test('an upgrade with an Origin header, as a browser page sends, is refused before any hello', async ({ host }) => {
    const socket = new WebSocket(withWireNonce(host.url, newWireNonce()), { origin: 'http://127.0.0.1:8123' });
    const [error] = (await once(socket, 'error')) as [Error];
    expect(error.message).toContain('403');
  });

  test("a page in a Chromium on this machine cannot open the host's WebSocket", async ({ host, fixtures }) => {
    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: [...BASE_CHROMIUM_ARGS] });
    try {
      const page = await browser.newPage();
      await page.goto(fixtures.url('quiet.html'));
      // A string, not a function: the page's own WebSocket, not this file's import.
      const url = JSON.stringify(withWireNonce(host.url, newWireNonce()));
      const outcome = await page.evaluate(`new Promise((resolve) => {
        const socket = new WebSocket(${url});
        socket.onmessage = () => resolve('received a frame');
        socket.onerror = () => resolve('refused');
        socket.onclose = () => resolve('refused');
      })`);
      expect(outcome).toBe('refused');
    } finally {
      await browser.close();
    }
  });

  test("a page in the host's own Chromium cannot open the host's WebSocket", async ({ host, client, lease, fixtures }) => {
    const target = encodeURIComponent(withWireNonce(host.url, newWireNonce()));
    await client.call('page.navigate', { lease_id: lease.lease_id, url: fixtures.url(`confinement/host-socket.html?target=${target}`), timeout_ms: 15_000 });
    await vi.waitFor(async () => expect((await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 5_000 })).snapshot).toContain('refused'), {
      timeout: 15_000,
      interval: 250,
    });
  });

  test('idle connections without the secret cannot lock the edge out: past MAX_PENDING_PER_PEER from one address the oldest is closed', async ({
    host,
    client,
  }) => {
    await client.call('host.status', {});
    const idle = await Promise.all(Array.from({ length: MAX_PENDING_PER_PEER }, () => rawConnection(host.url)));
    try {
      // Young connections still setting up are not closed for a newcomer, which is refused.
      const early = new WebSocket(withWireNonce(host.url, newWireNonce()));
      expect(((await once(early, 'error')) as [Error])[0].message).toContain('429');
      // Once they have idled past PENDING_EVICTABLE_MS, a newcomer takes the oldest one's place.
      await new Promise((resolve) => setTimeout(resolve, PENDING_EVICTABLE_MS + 200));
      const other = await connectHost(host.url, TEST_SECRET);
      expect(await other.call('host.status', {})).toMatchObject({ host_id: 'host-test' });
      await other.close();
      await vi.waitFor(() => expect(idle.filter(({ socket }) => socket.readyState === WebSocket.OPEN).length).toBeLessThanOrEqual(MAX_PENDING_PER_PEER));
      expect(await client.call('host.status', {})).toMatchObject({ host_id: 'host-test' });
    } finally {
      for (const { socket } of idle) socket.terminate();
    }
  });

  test('one address may hold at most MAX_CONNECTIONS_PER_PEER authenticated connections; the next upgrade is refused 429', async ({ host, client }) => {
    await client.call('host.status', {});
    const clients: Awaited<ReturnType<typeof connectHost>>[] = [];
    try {
      // In batches, so no more than MAX_PENDING_PER_PEER are ever setting up at once.
      while (clients.length < MAX_CONNECTIONS_PER_PEER - 1) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(8, MAX_CONNECTIONS_PER_PEER - 1 - clients.length) }, () => connectHost(host.url, TEST_SECRET)),
        );
        await Promise.all(batch.map((each) => each.call('host.status', {})));
        clients.push(...batch);
      }
      const refused = new WebSocket(withWireNonce(host.url, newWireNonce()));
      const [error] = (await once(refused, 'error')) as [Error];
      expect(error.message).toContain('429');
      expect(await client.call('host.status', {})).toMatchObject({ host_id: 'host-test' });
    } finally {
      await Promise.all(clients.map((each) => each.close()));
    }
  });

  test('a peer without the secret is cut off after 64 KiB, long before a 4 MiB frame is read', async ({ host, client }) => {
    const { socket } = await rawConnection(host.url);
    socket.send('x'.repeat(MAX_FRAME_BYTES - 1024));
    const [code] = await once(socket, 'close');
    expect(code).toBe(1006);
    expect(await client.call('host.status', {})).toMatchObject({ host_id: 'host-test' });
  });

  test('an unknown method answers unknown_method', async ({ client }) => {
    const response = await client.request('page.evaluate', { script: '1' });
    expect(response).toEqual({ id: expect.any(Number), error: { code: 'unknown_method', message: expect.any(String) } });
    expect(await client.request('toString', {})).toMatchObject({ error: { code: 'unknown_method' } });
  });

  test('params failing the method schema answer invalid_params naming the field', async ({ client }) => {
    const response = await client.request('lease.acquire', { run_id: 'r', profile_id: '../etc', ttl_ms: '1000' });
    expect(response).toMatchObject({ error: { code: 'invalid_params' } });
    if (!('error' in response)) throw new Error('expected an error');
    expect(response.error.message).toContain('profile_id');
    expect(response.error.message).toContain('ttl_ms');

    const extra = await client.request('host.status', { verbose: true });
    expect(extra).toMatchObject({ error: { code: 'invalid_params' } });
  });

  test('an authenticated body that is not a request answers invalid_params and the connection keeps serving', async ({ client }) => {
    const broken = '{"id": 1, "method": ';
    const brokenToken = await frameToken({ cid: client.connectionId, fid: 7778, method: 'host.status', bd: await wireDigest(broken) });
    expect(await client.sendRaw(`${brokenToken}\n${broken}`, 7778)).toEqual({ id: 7778, error: { code: 'invalid_params', message: 'the frame is not JSON' } });
    const arrayBody = '[1, 2, 3]';
    const arrayToken = await frameToken({ cid: client.connectionId, fid: 7779, method: 'host.status', bd: await wireDigest(arrayBody) });
    expect(await client.sendRaw(`${arrayToken}\n${arrayBody}`, 7779)).toMatchObject({ id: 7779, error: { code: 'invalid_params' } });
    expect(client.open).toBe(true);
    expect(await client.call('host.status', {})).toMatchObject({ host_id: 'host-test' });
  });

  test('an authenticated connection sending a frame over MAX_FRAME_BYTES is closed (1009); others are unaffected', async ({ host, client }) => {
    const other = await connectHost(host.url, TEST_SECRET);
    expect(await other.call('host.status', {})).toMatchObject({ host_id: 'host-test' });
    const closed = new Promise<number>((resolve) => other.onClose((code) => resolve(code)));
    void other.sendRaw('x'.repeat(MAX_FRAME_BYTES + 1)).catch(() => undefined);
    expect(await closed).toBe(1009);
    expect(await client.call('host.status', {})).toMatchObject({ host_id: 'host-test' });
  });

  test('a page operation on an unknown lease is lease_lost', async ({ client }) => {
    const response = await client.request('page.observe', { lease_id: 'lease_doesnotexist', timeout_ms: 5_000 });
    expect(response).toMatchObject({ error: { code: 'lease_lost' } });
  });
});
