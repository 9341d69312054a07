import { once } from 'node:events';
import { type AddressInfo, createConnection, createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startTcpRelay } from '../../../scripts/tcp-relay.ts';

// The relay that bridges a host's network namespace to this machine's loopback (test/support/
// host-network.ts). A peer behind a cut link never sends its FIN, so a connection the far side
// ended stays half open: closing the relay must not wait for it.

/** Whether `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = await Promise.race([promise.then(() => true), late]);
  clearTimeout(timer);
  return settled;
}

describe('the TCP relay', () => {
  it('closes at once with a connection the target ended and the client left half open', async () => {
    const target = createServer({ allowHalfOpen: true }, (socket) => socket.end('bye'));
    target.listen(0, '127.0.0.1');
    await once(target, 'listening');
    const relay = await startTcpRelay((target.address() as AddressInfo).port);
    const client: Socket = createConnection({ host: '127.0.0.1', port: relay.port, allowHalfOpen: true });
    client.on('error', () => {});
    client.resume();
    await once(client, 'end');
    try {
      expect(await settlesWithin(relay.close(), 2_000)).toBe(true);
    } finally {
      client.destroy();
      target.close();
    }
  });

  it('passes bytes both ways and counts the connections a cut ends', async () => {
    const target = createServer((socket) => socket.pipe(socket));
    target.listen(0, '127.0.0.1');
    await once(target, 'listening');
    const relay = await startTcpRelay((target.address() as AddressInfo).port);
    const client = createConnection({ host: '127.0.0.1', port: relay.port });
    client.write('ping');
    const [echoed] = (await once(client, 'data')) as [Buffer];
    expect(echoed.toString()).toBe('ping');
    const closed = once(client, 'close');
    expect(relay.cut()).toBe(1);
    await closed;
    await relay.close();
    target.close();
  });
});
