import { describe, expect, test, vi } from 'vitest';
import { answers } from '../support/scripted-dns.ts';

// A name server that rebinds: answers are scripted per name, and nothing here opens a socket.
vi.mock('node:dns/promises', () => import('../support/scripted-dns.ts'));

const { Confinement } = await import('../../browser-host/egress/confinement.ts');
const { PageEvents } = await import('../../browser-host/page/events.ts');

function confinementFor(origins: string[]) {
  const confinement = new Confinement({ allow: [], deny: [], hostPorts: () => [] }, new PageEvents());
  confinement.leaseOrigins = origins;
  return confinement;
}

describe('address checks of run-origin host names', () => {
  test("a run origin's name that answered public is refused when it rebinds to a private address", async () => {
    const confinement = confinementFor(['http://rebind.example']);
    answers.set('rebind.example', [{ address: '93.184.216.34', family: 4 }]);
    expect(await confinement.connection('rebind.example', 80, true)).toEqual({ pinned: { address: '93.184.216.34', family: 4, public: true } });
    answers.set('rebind.example', [{ address: '10.0.0.1', family: 4 }]);
    expect(await confinement.connection('rebind.example', 80, true)).toEqual({ refused: 'forbidden_address' });
  });

  test("a run origin's name never reaches the metadata service, even on its first answer", async () => {
    answers.set('metadata.example', [{ address: '169.254.169.254', family: 4 }]);
    expect(await confinementFor(['http://metadata.example']).connection('metadata.example', 80, true)).toEqual({ refused: 'forbidden_address' });
  });

  test('an intranet run origin may resolve to a private address', async () => {
    answers.set('wiki.internal', [{ address: '10.1.2.3', family: 4 }]);
    expect(await confinementFor(['http://wiki.internal']).connection('wiki.internal', 80, true)).toEqual({
      pinned: { address: '10.1.2.3', family: 4, public: false },
    });
  });

  test('plain HTTP matches http origins only: an https run origin does not open http to a private address', async () => {
    answers.set('internal.example', [{ address: '10.0.0.1', family: 4 }]);
    const confinement = confinementFor(['https://internal.example:8443']);
    expect(await confinement.connection('internal.example', 8443, true)).toEqual({ refused: 'forbidden_address' });
    expect(await confinement.connection('internal.example', 8443, false)).toEqual({ pinned: { address: '10.0.0.1', family: 4, public: false } });
  });
});
