import { afterEach, describe, expect, it, vi } from 'vitest';
import { fetchUpgradeConnector } from '../../../edge/host/fetch-upgrade-connector.ts';
import { HostUnreachable } from '../../../edge/host/host-session.ts';

// A host cut off by a partition drops the upgrade's packets: nothing answers and nothing
// refuses, and the runtime's own connect timeout is minutes away. The connector gives up at its
// own timeout, so the call can place the profile on another host (issue 32: failover).

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('the fetch-upgrade connector', () => {
  it('gives up with HostUnreachable at its timeout when the upgrade request never answers', async () => {
    let aborted = false;
    vi.stubGlobal(
      'fetch',
      (_url: string, init?: RequestInit) =>
        new Promise((_resolve, reject) => {
          init?.signal?.addEventListener('abort', () => {
            aborted = true;
            reject(init.signal?.reason);
          });
        }),
    );
    const started = Date.now();
    const outcome = await Promise.race([
      fetchUpgradeConnector('ws://10.0.0.1:8790', 'a-secret-of-at-least-32-bytes-long!!').connect(200),
      new Promise((resolve) => setTimeout(() => resolve('still waiting after 3 s'), 3_000)),
    ]).catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(HostUnreachable);
    expect((outcome as Error).message).toMatch(/did not answer within 200 ms/);
    expect(aborted).toBe(true);
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});
