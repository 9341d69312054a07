import { describe, expect, test } from 'vitest';
import {
  accountEvidence,
  genericChallengeSeen,
  judgeWithDefinition,
  type LoadEvidence,
  reachedProtected,
  sentToSignIn,
} from '../../browser-host/site-verification/verify.ts';
import { accountSiteDefinition } from '../../scripts/account-site.ts';

const ORIGIN = 'http://127.0.0.1:4100';
const definition = accountSiteDefinition(ORIGIN);

/** The reports page as Playwright's AI-mode snapshot shows it. */
const REPORTS = [
  '- main [ref=e1]:',
  '  - heading "Reports" [level=1] [ref=e2]',
  '  - paragraph [ref=e3]: Signed in as alice@example.test',
  '  - list "Filed reports" [ref=e4]',
  '  - paragraph [ref=e5]:',
  '    - link "New report" [ref=e6] [cursor=pointer]:',
  '      - /url: /reports/new',
].join('\n');

const load = (overrides: Partial<LoadEvidence> = {}): LoadEvidence => ({
  url: `${ORIGIN}/reports`,
  status: 200,
  snapshot: REPORTS,
  signInWall: false,
  ...overrides,
});

describe('verification evidence', () => {
  test('positive protected-state evidence signs in, with the account that follows the prefix', () => {
    expect(judgeWithDefinition(definition, load())).toEqual({ outcome: 'signed_in', account: 'alice@example.test' });
  });

  test('missing any piece of positive evidence is not verified: the path, a signed-in predicate, the absence of a password field', () => {
    expect(judgeWithDefinition(definition, load({ url: `${ORIGIN}/signin?next=/reports` }))).toMatchObject({ outcome: 'not_verified' });
    expect(judgeWithDefinition(definition, load({ url: 'http://127.0.0.1:4101/reports' }))).toMatchObject({ outcome: 'not_verified' });
    expect(judgeWithDefinition(definition, load({ snapshot: REPORTS.replace('link "New report"', 'link "Old report"') }))).toMatchObject({
      outcome: 'not_verified',
    });
    expect(judgeWithDefinition(definition, load({ signInWall: true }))).toMatchObject({ outcome: 'not_verified' });
    // A check that could not be made proves nothing either.
    expect(judgeWithDefinition(definition, load({ signInWall: undefined }))).toMatchObject({ outcome: 'not_verified' });
  });

  test('a challenge predicate wins over everything else on the page', () => {
    const challenged = `${REPORTS}\n- heading "Verify you are human" [level=1] [ref=e9]`;
    expect(judgeWithDefinition(definition, load({ snapshot: challenged }))).toMatchObject({ outcome: 'challenge' });
  });

  test('account evidence is the text after the prefix in the innermost node; two different accounts are none', () => {
    expect(accountEvidence('- paragraph [ref=e1]:\n  - text: Signed in as\n  - strong [ref=e2]: bob@example.test', 'Signed in as ')).toBe('bob@example.test');
    expect(accountEvidence('- paragraph [ref=e1]: "Signed in as bob@example.test "', 'Signed in as ')).toBe('bob@example.test');
    expect(accountEvidence('- paragraph: Signed in as a@x\n- paragraph: Signed in as b@x', 'Signed in as ')).toBeUndefined();
    expect(accountEvidence('- paragraph: Signed in as a@x\n- paragraph: Signed in as a@x', 'Signed in as ')).toBe('a@x');
    expect(accountEvidence('- paragraph: Welcome', 'Signed in as ')).toBeUndefined();
  });

  test('differential: the profile must reach the exact path without a password field, status error or challenge marker; the control must be shown a sign-in form', () => {
    const protectedUrl = `${ORIGIN}/reports`;
    expect(reachedProtected(load(), protectedUrl)).toEqual({ ok: true });
    expect(reachedProtected(load({ url: `${ORIGIN}/signin` }), protectedUrl)).toMatchObject({ ok: false });
    expect(reachedProtected(load({ status: 403 }), protectedUrl)).toMatchObject({ ok: false });
    expect(reachedProtected(load({ signInWall: true }), protectedUrl)).toMatchObject({ ok: false });
    expect(reachedProtected(load({ snapshot: '- heading "Please complete the CAPTCHA" [level=1]' }), protectedUrl)).toMatchObject({ ok: false });
    expect(sentToSignIn(load({ url: `${ORIGIN}/signin?next=/reports`, signInWall: true }))).toBe(true);
    // Being moved elsewhere is not being sent to sign-in (a consent or welcome page).
    expect(sentToSignIn(load({ url: `${ORIGIN}/welcome` }))).toBe(false);
    expect(sentToSignIn(load({ signInWall: true }))).toBe(true);
    // A wall that asks for no credential itself (a consent page a redirect carried the URL to) is no sign-in.
    expect(sentToSignIn(load({ signInWall: true, credentialWall: false }))).toBe(false);
    expect(sentToSignIn(load())).toBe(false);
    expect(genericChallengeSeen('- heading "Verify you are human" [level=1]')).toBe(true);
    expect(genericChallengeSeen(REPORTS)).toBe(false);
  });
});

describe('differential verification evidence of unknown sites (ADR-0164 part 2)', () => {
  /** A load of the site's home page; the judgement functions are given only what a load shows. */
  const homeLoad = (overrides: Partial<LoadEvidence>): LoadEvidence => ({
    url: `${ORIGIN}/home`,
    status: 200,
    snapshot: '- main [ref=e1]',
    signInWall: false,
    ...overrides,
  });

  test('a clean control load that merely lands somewhere else (consent, locale, home page) was not sent to sign-in', () => {
    // Only a sign-in form counts as "sent to sign-in", not any other path or origin: otherwise a
    // profile that only holds a consent cookie "reaches" the page while the clean browser is
    // redirected to the consent interstitial, and the ceremony is `verified` with nobody signed in
    // (in real Chromium: test/host/differential-verification-hostile-sites.test.ts).
    const welcome = homeLoad({ url: `${ORIGIN}/welcome`, snapshot: ['- heading "Welcome" [level=1] [ref=e1]', '- link "Continue" [ref=e2]'].join('\n') });
    expect(sentToSignIn(welcome)).toBe(false);
    const locale = homeLoad({ url: `${ORIGIN}/en/home`, snapshot: '- heading "Home" [level=1] [ref=e1]' });
    expect(sentToSignIn(locale)).toBe(false);
    const elsewhere = homeLoad({ url: 'https://consent.example/ask?return=/home', snapshot: '- heading "Your privacy choices" [level=1] [ref=e1]' });
    expect(sentToSignIn(elsewhere)).toBe(false);
  });

  test("today's common interstitial challenge wording counts as a challenge, never as reaching the page", () => {
    // The generic challenge markers include the current Cloudflare interstitial ("Verifying you
    // are human. This may take a few seconds.") and reCAPTCHA's "I'm not a robot".
    const cloudflare = ['- heading "127.0.0.1" [level=1] [ref=e1]', '- paragraph [ref=e2]: Verifying you are human. This may take a few seconds.'].join('\n');
    const recaptcha = ['- heading "One more step" [level=1] [ref=e1]', '- checkbox "I\'m not a robot" [ref=e2]'].join('\n');
    for (const snapshot of [cloudflare, recaptcha]) {
      expect(genericChallengeSeen(snapshot)).toBe(true);
      expect(reachedProtected(homeLoad({ snapshot }), `${ORIGIN}/home`).ok).toBe(false);
    }
  });
});
