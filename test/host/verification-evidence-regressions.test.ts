import { describe, expect, test } from 'vitest';
import { genericChallengeSeen, reachedProtected, sentToSignIn, type LoadEvidence } from '../../browser-host/site-verification/verify.ts';

// Review regressions for differential verification of unknown sites (ADR-0164 part 2), at the
// level of the pure judgement functions in browser-host/site-verification/verify.ts.

const ORIGIN = 'http://127.0.0.1:4100';

const load = (overrides: Partial<LoadEvidence>): LoadEvidence => ({ url: `${ORIGIN}/home`, status: 200, snapshot: '- main [ref=e1]', passwordField: false, ...overrides });

describe('differential verification evidence (review)', () => {
  test('a clean control load that merely lands somewhere else (consent, locale, home page) was not sent to sign-in', () => {
    // verify.ts:246-250 counts any other path or origin as "sent to sign-in"; a profile that only
    // holds a consent cookie then "reaches" the page while the clean browser is redirected to the
    // consent interstitial, and the ceremony is `verified` with nobody signed in (reproduced in real
    // Chromium: test/host/differential-verification-review.test.ts).
    const welcome = load({ url: `${ORIGIN}/welcome`, snapshot: ['- heading "Welcome" [level=1] [ref=e1]', '- link "Continue" [ref=e2]'].join('\n') });
    expect(sentToSignIn(welcome)).toBe(false);
    const locale = load({ url: `${ORIGIN}/en/home`, snapshot: '- heading "Home" [level=1] [ref=e1]' });
    expect(sentToSignIn(locale)).toBe(false);
    const elsewhere = load({ url: 'https://consent.example/ask?return=/home', snapshot: '- heading "Your privacy choices" [level=1] [ref=e1]' });
    expect(sentToSignIn(elsewhere)).toBe(false);
  });

  test("today's common interstitial challenge wording counts as a challenge, never as reaching the page", () => {
    // GENERIC_CHALLENGE_MARKERS (verify.ts:31-39) miss the current Cloudflare interstitial
    // ("Verifying you are human. This may take a few seconds.") and reCAPTCHA's "I'm not a robot".
    const cloudflare = ['- heading "127.0.0.1" [level=1] [ref=e1]', '- paragraph [ref=e2]: Verifying you are human. This may take a few seconds.'].join('\n');
    const recaptcha = ['- heading "One more step" [level=1] [ref=e1]', '- checkbox "I\'m not a robot" [ref=e2]'].join('\n');
    for (const snapshot of [cloudflare, recaptcha]) {
      expect(genericChallengeSeen(snapshot)).toBe(true);
      expect(reachedProtected(load({ snapshot }), `${ORIGIN}/home`).ok).toBe(false);
    }
  });
});
