import { describe, expect, test, vi } from 'vitest';
import { answers } from '../support/scripted-dns.ts';

// HOST_EGRESS_DENY against a sign-in window, which may load documents from any origin
// (README "Signing in through an identity provider": "HOST_EGRESS_DENY still wins").
// A name server whose answers are scripted per name; nothing here opens a socket.
vi.mock('node:dns/promises', () => import('../support/scripted-dns.ts'));

const { Confinement } = await import('../../browser-host/egress/confinement.ts');
const { PageEvents } = await import('../../browser-host/page/events.ts');

function signingIn() {
  const confinement = new Confinement({ allow: [], deny: ['https://evil.example'], hostPorts: () => [] }, new PageEvents());
  confinement.ceremonyOrigins = ['https://shop.example'];
  confinement.signInWindow = { onRefused: () => {}, onDocument: () => {} };
  return confinement;
}

describe('an operator-denied origin during a sign-in', () => {
  test('is refused however the URL spells it', () => {
    const confinement = signingIn();
    expect(confinement.documentVerdict('https://evil.example/login')).toBe('operator_denied');
    expect(confinement.documentVerdict('https://EVIL.example:443/login')).toBe('operator_denied');
    // The fully-qualified spelling (a trailing dot) names the same host; DNS answers it the same.
    expect(confinement.documentVerdict('https://evil.example./login')).toBe('operator_denied');
  });

  test('its fully-qualified host name is refused at the connection too', async () => {
    const confinement = signingIn();
    answers.set('evil.example', [{ address: '93.184.216.34', family: 4 }]);
    answers.set('evil.example.', [{ address: '93.184.216.34', family: 4 }]);
    expect(await confinement.connection('evil.example', 443)).toEqual({ refused: 'operator_denied' });
    expect(await confinement.connection('evil.example.', 443)).toEqual({ refused: 'operator_denied' });
  });
});
