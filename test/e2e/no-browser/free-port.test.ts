import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../scripts/local-processes.ts';

// scripts/local-processes.ts freePort: the port a local stack's edge, hosts and inspector are
// started on. One from the kernel's ephemeral range could be taken as the source port of any
// outgoing connection before the server bound it (a CI run's `wrangler dev` failed so).

describe('freePort', () => {
  it('gives loopback ports below the ephemeral range that a server can listen on', async () => {
    const ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(ephemeralStart);
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      });
      await new Promise((resolve) => server.close(resolve));
    }
    expect(new Set(ports).size).toBeGreaterThan(15);
  });
});
