import { describe, expect, it } from 'vitest';
import { returnUrlOf } from '../../../shared/sign-in-return.ts';

// Where a sign-in page says the person was going: the protected page a ceremony is verified
// against when an act or a read meets the wall.

const SITE = 'https://reports.example';
const IDP = 'https://id.example';

describe('the return URL a sign-in page carries', () => {
  it('reads the common parameters, as paths or absolute URLs, whatever their case and separators', () => {
    expect(returnUrlOf(`${SITE}/signin?next=/reports`, [SITE])).toBe(`${SITE}/reports`);
    expect(returnUrlOf(`${SITE}/login?returnTo=${encodeURIComponent(`${SITE}/reports/7?tab=a`)}`, [SITE])).toBe(`${SITE}/reports/7?tab=a`);
    expect(returnUrlOf(`${SITE}/login?ReturnUrl=%2Faccount`, [SITE])).toBe(`${SITE}/account`);
    expect(returnUrlOf(`${SITE}/login?return_to=/a`, [SITE])).toBe(`${SITE}/a`);
    expect(returnUrlOf(`${IDP}/authorize?client_id=x&redirect_uri=${encodeURIComponent(`${SITE}/callback`)}`, [SITE, IDP])).toBe(`${SITE}/callback`);
    expect(returnUrlOf(`${IDP}/saml?RelayState=${encodeURIComponent(`${SITE}/inbox`)}`, [SITE, IDP])).toBe(`${SITE}/inbox`);
    expect(returnUrlOf(`${SITE}/ServiceLogin?continue=${encodeURIComponent(`${SITE}/mail`)}`, [SITE])).toBe(`${SITE}/mail`);
  });

  it("gives nothing that is not a page of the run's origins: other origins, other schemes, credentials, the sign-in page itself", () => {
    expect(returnUrlOf(`${SITE}/signin?next=${encodeURIComponent('https://evil.example/steal')}`, [SITE])).toBeUndefined();
    expect(returnUrlOf(`${SITE}/signin?next=${encodeURIComponent('javascript:alert(1)')}`, [SITE])).toBeUndefined();
    expect(returnUrlOf(`${SITE}/signin?next=${encodeURIComponent('//evil.example/x')}`, [SITE])).toBeUndefined();
    expect(returnUrlOf(`${SITE}/signin?next=${encodeURIComponent(`https://user:pw@reports.example/x`)}`, [SITE])).toBeUndefined();
    expect(returnUrlOf(`${SITE}/signin?next=/signin`, [SITE])).toBeUndefined();
    expect(returnUrlOf(`${SITE}/signin?lang=en&q=/reports`, [SITE])).toBeUndefined();
    expect(returnUrlOf(`${SITE}/signin`, [SITE])).toBeUndefined();
    expect(returnUrlOf('not a url', [SITE])).toBeUndefined();
  });

  it('takes the first parameter that names such a page', () => {
    expect(returnUrlOf(`${SITE}/signin?next=${encodeURIComponent('https://evil.example/')}&returnTo=/reports`, [SITE])).toBe(`${SITE}/reports`);
  });
});
