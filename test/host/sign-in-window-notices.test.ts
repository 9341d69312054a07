import { describe, expect, test } from 'vitest';
import { Confinement } from '../../browser-host/egress/confinement.ts';
import { PageEvents } from '../../browser-host/page/events.ts';
import { ViewNoticeMessage } from '../../shared/live-view.ts';

// Every sentence the sign-in window tells the person must fit a `liveview.notice`
// (shared/live-view.ts ViewNoticeMessage, at most 500 characters): the edge drops a notification
// that does not parse, so the person is never told. A URL's host name may be far longer than a
// DNS name (a popup or a refused document needs no look-up).

describe('refusal sentences of the sign-in window', () => {
  const long = `https://${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${'e'.repeat(60)}.${'f'.repeat(60)}.example`;
  test.for([
    { kind: 'popup', reason: 'popup_refused' },
    { kind: 'navigation', reason: 'outside_sign_in_origins' },
  ] as const)('$kind $reason of a long origin still fits a live-view notice', ({ kind, reason }) => {
    const told: string[] = [];
    const confinement = new Confinement({ allow: [], deny: [], hostPorts: () => [], signIn: [] }, new PageEvents());
    confinement.signInWindow = { onRefused: (sentence) => told.push(sentence), onDocument: () => {} };
    expect(new URL(long).origin).toBe(long);
    confinement.refuse({ origin: long, kind, reason });
    expect(told).toHaveLength(1);
    // Before the fix, for the popup: a sentence of about 550 characters, which ViewNoticeMessage refuses.
    expect(ViewNoticeMessage.safeParse(told[0]).success).toBe(true);
  });
});
