import { describe, expect, test } from 'vitest';
import {
  accountEvidence,
  genericChallengeSeen,
  judgeWithDefinition,
  reachedProtected,
  sentToSignIn,
  type LoadEvidence,
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
  passwordField: false,
  ...overrides,
});

describe('verification evidence', () => {
  test('positive protected-state evidence signs in, with the account that follows the prefix', () => {
    expect(judgeWithDefinition(definition, load())).toEqual({ outcome: 'signed_in', account: 'alice@example.test' });
  });

  test('missing any piece of positive evidence is not verified: the path, a signed-in predicate, the absence of a password field', () => {
    expect(judgeWithDefinition(definition, load({ url: `${ORIGIN}/signin?next=/reports` }))).toMatchObject({ outcome: 'not_verified' });
    expect(judgeWithDefinition(definition, load({ url: 'http://127.0.0.1:4101/reports' }))).toMatchObject({ outcome: 'not_verified' });
    expect(judgeWithDefinition(definition, load({ snapshot: REPORTS.replace('link "New report"', 'link "Old report"') }))).toMatchObject({ outcome: 'not_verified' });
    expect(judgeWithDefinition(definition, load({ passwordField: true }))).toMatchObject({ outcome: 'not_verified' });
    // A check that could not be made proves nothing either.
    expect(judgeWithDefinition(definition, load({ passwordField: undefined }))).toMatchObject({ outcome: 'not_verified' });
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
    expect(reachedProtected(load({ passwordField: true }), protectedUrl)).toMatchObject({ ok: false });
    expect(reachedProtected(load({ snapshot: '- heading "Please complete the CAPTCHA" [level=1]' }), protectedUrl)).toMatchObject({ ok: false });
    expect(sentToSignIn(load({ url: `${ORIGIN}/signin?next=/reports`, passwordField: true }))).toBe(true);
    // Being moved elsewhere is not being sent to sign-in (a consent or welcome page).
    expect(sentToSignIn(load({ url: `${ORIGIN}/welcome` }))).toBe(false);
    expect(sentToSignIn(load({ passwordField: true }))).toBe(true);
    expect(sentToSignIn(load())).toBe(false);
    expect(genericChallengeSeen('- heading "Verify you are human" [level=1]')).toBe(true);
    expect(genericChallengeSeen(REPORTS)).toBe(false);
  });
});
