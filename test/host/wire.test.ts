import { once } from 'node:events';
import { SignJWT } from 'jose';
import { describe, expect } from 'vitest';
import WebSocket from 'ws';
import { MAX_FRAME_BYTES } from '../../shared/protocol.ts';
import { signWireToken } from '../../shared/wire-auth.ts';
import { hostTest, TEST_SECRET } from '../support/host-fixture.ts';

const test = hostTest();

describe('the wire', () => {
  test('the hello frame names the host and its token verifies with the shared secret', async ({ client }) => {
    // connectHost has verified the token (iss browser-host, aud edge) before returning.
    expect(client.hello.method).toBe('host.hello');
    expect(client.hello.params.host_id).toBe('host-test');
  });

  test('a frame without auth, or with a bad token, is unauthorized and the connection keeps serving', async ({ client }) => {
    const missing = await client.request('host.status', {}, { kind: 'omitted' });
    expect(missing).toEqual({ id: expect.any(Number), error: { code: 'unauthorized_frame', message: expect.any(String) } });

    const forged = await client.request('host.status', {}, { kind: 'token', token: 'not-a-token' });
    expect(forged).toEqual({ id: expect.any(Number), error: { code: 'unauthorized_frame', message: expect.any(String) } });

    const wrongSecret = await signWireToken('another-secret-that-is-at-least-32-bytes', 'edge', 'browser-host');
    const wrongKey = await client.request('host.status', {}, { kind: 'token', token: wrongSecret });
    expect(wrongKey).toMatchObject({ error: { code: 'unauthorized_frame' } });

    // The host's own hello token is signed the other way round and must not pass as the edge's.
    const reflected = await client.request('host.status', {}, { kind: 'token', token: client.hello.params.auth });
    expect(reflected).toMatchObject({ error: { code: 'unauthorized_frame' } });

    // Signed with the right key but never expiring, or expiring in 2100: not short-lived, refused.
    const key = new TextEncoder().encode(TEST_SECRET);
    const endless = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer('edge').setAudience('browser-host').setIssuedAt().sign(key);
    expect(await client.request('host.status', {}, { kind: 'token', token: endless })).toMatchObject({ error: { code: 'unauthorized_frame' } });
    const farFuture = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('edge')
      .setAudience('browser-host')
      .setIssuedAt(Math.floor(Date.now() / 1000) - 3600)
      .setExpirationTime(new Date('2100-01-01T00:00:00Z'))
      .sign(key);
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
    });
  });

  test('an upgrade with an Origin header, as a browser page sends, is refused before any hello', async ({ host }) => {
    const socket = new WebSocket(host.url, { origin: 'http://127.0.0.1:8123' });
    const [error] = (await once(socket, 'error')) as [Error];
    expect(error.message).toContain('403');
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

  test('malformed JSON answers invalid_params with a null id and the connection keeps serving', async ({ client }) => {
    expect(await client.sendRaw('{"id": 1, "method": ')).toEqual({ id: null, error: { code: 'invalid_params', message: 'the frame is not JSON' } });
    expect(await client.sendRaw('[1, 2, 3]')).toMatchObject({ id: null, error: { code: 'invalid_params' } });
    const auth = await signWireToken(TEST_SECRET, 'edge', 'browser-host');
    expect(await client.sendRaw(JSON.stringify({ id: 7777, method: 'host.status', auth }), 7777)).toMatchObject({
      id: 7777,
      error: { code: 'invalid_params' },
    });
    expect(client.open).toBe(true);
    expect(await client.call('host.status', {})).toMatchObject({ host_id: 'host-test' });
  });

  test('a frame over MAX_FRAME_BYTES is refused by closing that connection (1009); others are unaffected', async ({ host, client }) => {
    const socket = new WebSocket(host.url);
    await once(socket, 'message'); // hello
    socket.send('x'.repeat(MAX_FRAME_BYTES + 1));
    const [code] = await once(socket, 'close');
    expect(code).toBe(1009);
    expect(await client.call('host.status', {})).toMatchObject({ host_id: 'host-test' });
  });

  test('a page operation on an unknown lease is lease_lost', async ({ client }) => {
    const response = await client.request('page.observe', { lease_id: 'lease_doesnotexist', timeout_ms: 5_000 });
    expect(response).toMatchObject({ error: { code: 'lease_lost' } });
  });
});
