import { describe, expect, it } from 'vitest';
import { bearerTokenOf } from '../../../edge/auth/bearer-token.ts';
import { isLoopbackHostname } from '../../../edge/auth/loopback.ts';

describe('the loopback rule', () => {
  it('holds for localhost, names under .localhost, 127.0.0.1 and [::1], whatever their case', () => {
    for (const host of ['localhost', 'LocalHost', 'edge.localhost', '127.0.0.1', '[::1]']) expect(isLoopbackHostname(host), host).toBe(true);
  });

  it('does not hold for look-alike or public names', () => {
    for (const host of ['localhost.example.com', 'notlocalhost', '127.0.0.2', '10.0.0.1', 'example.com', '[::2]', '']) {
      expect(isLoopbackHostname(host), host).toBe(false);
    }
  });
});

describe('the bearer token of an Authorization header', () => {
  it('is the token after "Bearer " when it has the accepted shape', () => {
    expect(bearerTokenOf('Bearer abcdefghijklmnop_-12')).toBe('abcdefghijklmnop_-12');
  });

  it('is undefined for a missing header, another scheme, a short token or one with other characters', () => {
    for (const header of [undefined, '', 'Basic abcdefghijklmnopqr', 'Bearer short', 'Bearer abcdefghijklmnop!', 'bearer abcdefghijklmnopqr']) {
      expect(bearerTokenOf(header), String(header)).toBeUndefined();
    }
  });
});
