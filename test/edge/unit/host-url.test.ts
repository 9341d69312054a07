import { describe, expect, it } from 'vitest';
import { canonicalHostUrl } from '../../../edge/fleet/host-url.ts';
import { normalHostUrl } from '../../../edge/fleet/registry.ts';
import { edgeConfigFrom } from '../../../edge/ports.ts';

// One canonical form of a host's wire URL (issue 32): a host listed in HOST_URLS and registered
// through POST /v1/hosts is the same host, whichever way its URL was written.

describe('host URLs', () => {
  it('writes a bare origin without its slash and keeps a path', () => {
    expect(canonicalHostUrl('ws://127.0.0.1:8790/')).toEqual({ url: 'ws://127.0.0.1:8790' });
    expect(canonicalHostUrl(' wss://host.example:443/wire#x ')).toEqual({ url: 'wss://host.example/wire' });
  });

  it('lists a host written two ways in HOST_URLS once, in the form POST /v1/hosts stores', () => {
    const config = edgeConfigFrom({ HOST_URLS: 'ws://127.0.0.1:8790/, ws://127.0.0.1:8790 ,ws://127.0.0.1:8791' });
    expect(config.hostUrls).toEqual(['ws://127.0.0.1:8790', 'ws://127.0.0.1:8791']);
    expect(config.hostUrls).toContain(normalHostUrl('ws://127.0.0.1:8790/'));
  });

  it('refuses what is not a ws:// or wss:// URL, or carries credentials', () => {
    expect(() => edgeConfigFrom({ HOST_URLS: 'http://127.0.0.1:8790' })).toThrow(/ws:\/\/ or wss:\/\//);
    expect(() => edgeConfigFrom({ HOST_URLS: 'ws://user:pw@127.0.0.1:8790' })).toThrow(/credentials/);
    expect(() => normalHostUrl('not a url')).toThrow(/not a URL/);
  });
});
