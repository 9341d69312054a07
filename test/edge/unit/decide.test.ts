import { describe, expect, it } from 'vitest';
import { canonicalHash } from '../../../edge/policy/canonical-hash.ts';
import { boundedBrowserHover } from '../../../edge/policy/conditions.ts';
import { type DecisionInput, decide } from '../../../edge/policy/decide.ts';
import { DEFAULT_PROFILE_BODY, DEFAULT_PROFILE_VERSION, type PolicyProfile } from '../../../edge/policy/profile.ts';
import type { PolicyProfileBody } from '../../../shared/policy.ts';
import { parseInvocation, type ToolName, type ToolVersion } from '../../../shared/tools.ts';

// `decide` called directly (DESIGN.md section 5): hardline rules, authority, the page's origin,
// operator denies, the profile's rules in order, the tool defaults, then the external-untrusted
// overlay that only `bounded_browser_scroll` (ADR-0168) and `bounded_browser_hover` (issue 33) are
// exempt from.

const RUN = 'http://127.0.0.1:8080';

async function profileOf(body: PolicyProfileBody = DEFAULT_PROFILE_BODY): Promise<PolicyProfile> {
  return { name: 'default', version: DEFAULT_PROFILE_VERSION, body, hash: await canonicalHash(body) };
}

function input(
  tool: ToolName,
  args: Record<string, unknown>,
  overrides: Partial<Omit<DecisionInput, 'invocation' | 'proposed'>> = {},
  version: ToolVersion = '1.2.0',
): DecisionInput {
  const parsed = parseInvocation(tool, version, args);
  if (!parsed.success) throw new Error(`test arguments do not validate: ${parsed.error.message}`);
  return {
    invocation: parsed.invocation,
    proposed: args,
    runOrigins: [RUN],
    pageOrigin: RUN,
    authority: 'user',
    tainted: false,
    pageDerived: tool === 'browser.act',
    ...overrides,
  };
}

const scroll = (delta: number) => ({ action: 'scroll', revision: 1, reference: 'e1', delta });
const click = { action: 'click', revision: 1, reference: 'e2' };

describe('decide', () => {
  it('denies a navigation to a non-http(s) URL or one with credentials by a hardline rule, whatever the authority', async () => {
    const profile = await profileOf();
    expect(decide(input('browser.navigate', { url: 'file:///etc/passwd' }), profile)).toMatchObject({ effect: 'deny', rule: 'hardline.scheme' });
    expect(decide(input('browser.navigate', { url: 'http://me:secret@127.0.0.1:8080/' }), profile)).toMatchObject({
      effect: 'deny',
      rule: 'hardline.credentials',
    });
    expect(decide(input('browser.navigate', { url: 'not a url' }), profile)).toMatchObject({ effect: 'deny', rule: 'hardline.url' });
  });

  it('denies every call of a turn without authority (the newest message was relayed, untrusted)', async () => {
    const decision = decide(input('browser.observe', {}, { authority: null }), await profileOf());
    expect(decision).toMatchObject({ effect: 'deny', rule: 'authority.none', authority: 'none' });
  });

  it('denies an act on a page outside the run origins, even a bounded scroll', async () => {
    const decision = decide(input('browser.act', scroll(300), { pageOrigin: 'http://127.0.0.1:9999' }), await profileOf());
    expect(decision).toMatchObject({ effect: 'deny', rule: 'hardline.page_origin' });
  });

  it('allows a navigation to a run origin and denies one elsewhere by default', async () => {
    const profile = await profileOf();
    expect(decide(input('browser.navigate', { url: `${RUN}/reports` }), profile)).toMatchObject({ effect: 'allow', rule: 'navigate.run_origins' });
    expect(decide(input('browser.navigate', { url: 'http://127.0.0.1:9999/' }), profile)).toMatchObject({ effect: 'deny', rule: 'default.navigate' });
  });

  it('turns an allowed navigation to a URL read off the page into an approval (the external-untrusted overlay)', async () => {
    const decision = decide(input('browser.navigate', { url: `${RUN}/next` }, { tainted: true, pageDerived: true }), await profileOf());
    expect(decision).toMatchObject({ effect: 'approval', rule: 'navigate.run_origins', overlay: 'external_untrusted', tainted: true });
  });

  it('allows a bounded scroll of 1-2,000 px on a page-derived reference and asks for 2,001 px', async () => {
    const profile = await profileOf();
    expect(decide(input('browser.act', scroll(2_000), { tainted: true }), profile)).toMatchObject({ effect: 'allow', rule: 'act.bounded_scroll' });
    expect(decide(input('browser.act', scroll(-1), { tainted: true }), profile)).toMatchObject({ effect: 'allow', rule: 'act.bounded_scroll' });
    expect(decide(input('browser.act', scroll(2_001)), profile)).toMatchObject({ effect: 'approval', rule: 'act.approval' });
  });

  it('reads the scroll condition off the arguments as proposed: a delta sent as a string needs approval', async () => {
    const parsed = input('browser.act', scroll(100));
    const decision = decide({ ...parsed, proposed: { ...scroll(100), delta: '100' } }, await profileOf());
    expect(decision).toMatchObject({ effect: 'approval', rule: 'act.approval' });
  });

  it('asks the owner for a click and allows an observe, both recording the profile they were decided under', async () => {
    const profile = await profileOf();
    expect(decide(input('browser.act', click), profile)).toEqual({
      effect: 'approval',
      rule: 'act.approval',
      reason: 'profile default v3 rule act.approval',
      policy_hash: profile.hash,
      profile_version: DEFAULT_PROFILE_VERSION,
      authority: 'user',
      tainted: false,
    });
    expect(decide(input('browser.observe', {}, { tainted: true }), profile)).toMatchObject({ effect: 'allow', rule: 'observe.allow' });
  });

  it("lets an operator deny win over the profile's allow rules, matched on tool, action kind and origin", async () => {
    const body: PolicyProfileBody = {
      ...DEFAULT_PROFILE_BODY,
      denies: [{ id: 'no-scrolling-here', tool: 'browser.act', actions: ['scroll'], origins: [RUN], reason: 'no scrolling on this site' }],
    };
    const profile = await profileOf(body);
    expect(decide(input('browser.act', scroll(300)), profile)).toMatchObject({
      effect: 'deny',
      rule: 'no-scrolling-here',
      reason: 'operator deny: no scrolling on this site',
    });
    // Another action kind, or another page origin, is not denied by it.
    expect(decide(input('browser.act', click), profile)).toMatchObject({ effect: 'approval', rule: 'act.approval' });
    expect(
      decide(input('browser.act', scroll(300), { runOrigins: [RUN, 'http://127.0.0.1:8081'], pageOrigin: 'http://127.0.0.1:8081' }), profile),
    ).toMatchObject({
      effect: 'allow',
    });
  });

  it('takes the first matching rule of the profile', async () => {
    const body: PolicyProfileBody = { rules: [{ id: 'act.all_allowed', tool: 'browser.act', effect: 'allow' }, ...DEFAULT_PROFILE_BODY.rules], denies: [] };
    // An allow rule without the scroll condition still gets the overlay for a page-derived reference.
    expect(decide(input('browser.act', click), await profileOf(body))).toMatchObject({
      effect: 'approval',
      rule: 'act.all_allowed',
      overlay: 'external_untrusted',
    });
    expect(decide(input('browser.act', click, { pageDerived: false }), await profileOf(body))).toMatchObject({ effect: 'allow', rule: 'act.all_allowed' });
  });
});

const WIDGETS = 'http://127.0.0.1:8081';
const hover = { action: 'hover', revision: 1, reference: 'e3' };
const act15 = (args: Record<string, unknown>, overrides: Partial<Omit<DecisionInput, 'invocation' | 'proposed'>> = {}) =>
  input('browser.act', args, { tainted: true, ...overrides }, '1.5.0');

describe('decide: hover (issue 33)', () => {
  it('allows a hover on a page-derived reference or a point under the default profile, without the overlay', async () => {
    const profile = await profileOf();
    for (const args of [hover, { action: 'hover', revision: 1, point: { x: 10, y: 20 } }]) {
      const decision = decide(act15(args), profile);
      expect(decision).toMatchObject({ effect: 'allow', rule: 'act.bounded_hover', profile_version: 3 });
      expect(decision.overlay).toBeUndefined();
    }
  });

  it('asks for a hover under a profile without the rule, and never lets the rule cover a click or a drag', async () => {
    const withoutHover = await profileOf({ ...DEFAULT_PROFILE_BODY, rules: DEFAULT_PROFILE_BODY.rules.filter((rule) => rule.id !== 'act.bounded_hover') });
    expect(decide(act15(hover), withoutHover)).toMatchObject({ effect: 'approval', rule: 'act.approval' });
    const profile = await profileOf();
    expect(decide(act15(click), profile)).toMatchObject({ effect: 'approval', rule: 'act.approval' });
    expect(decide(act15({ action: 'drag', revision: 1, reference: 'e3', to_reference: 'e4' }), profile)).toMatchObject({
      effect: 'approval',
      rule: 'act.approval',
    });
  });

  it('an operator deny of hovers, and a hardline rule, beat the hover rule', async () => {
    const profile = await profileOf({
      ...DEFAULT_PROFILE_BODY,
      denies: [{ id: 'deny.hover', tool: 'browser.act', actions: ['hover'], reason: 'no hovering' }],
    });
    expect(decide(act15(hover), profile)).toMatchObject({ effect: 'deny', rule: 'deny.hover' });
    expect(decide(act15(hover, { frameOrigins: ['https://ads.example'] }), await profileOf())).toMatchObject({
      effect: 'deny',
      rule: 'hardline.frame_origin',
    });
  });
});

describe('decide: operator denies of what an act sends (issue 33)', () => {
  it('a deny of typing also denies a fill_form that types, and a deny of clicks a drag or a form submitted by a click', async () => {
    const profile = await profileOf({
      ...DEFAULT_PROFILE_BODY,
      denies: [
        { id: 'deny.typing', tool: 'browser.act', actions: ['type'], reason: 'never type here' },
        { id: 'deny.keys', tool: 'browser.act', actions: ['press'], reason: 'no keys here' },
      ],
    });
    const fill = { action: 'fill_form', revision: 1, fields: [{ reference: 'e2', value: 'Ada' }] };
    expect(decide(act15(fill), profile)).toMatchObject({ effect: 'deny', rule: 'deny.typing' });
    expect(decide(act15({ action: 'fill_form', revision: 1, fields: [{ reference: 'e2', value: true }], submit_key: 'Enter' }), profile)).toMatchObject({
      effect: 'deny',
      rule: 'deny.keys',
    });
    // A form of checkboxes only sends no typing and no keys: the owner decides as for any act.
    expect(decide(act15({ action: 'fill_form', revision: 1, fields: [{ reference: 'e2', value: true }] }), profile)).toMatchObject({ effect: 'approval' });
    const noClicks = await profileOf({
      ...DEFAULT_PROFILE_BODY,
      denies: [{ id: 'deny.clicks', tool: 'browser.act', actions: ['click'], reason: 'no clicks' }],
    });
    expect(decide(act15({ action: 'drag', revision: 1, reference: 'e2', to_reference: 'e3' }), noClicks)).toMatchObject({
      effect: 'deny',
      rule: 'deny.clicks',
    });
    expect(decide(act15({ action: 'fill_form', revision: 1, fields: [{ reference: 'e2', value: true }], submit_reference: 'e9' }), noClicks)).toMatchObject({
      effect: 'deny',
      rule: 'deny.clicks',
    });
  });
});

describe('decide: acts touching several frames (issue 33)', () => {
  const fill = {
    action: 'fill_form',
    revision: 1,
    fields: [
      { reference: 'e2', value: 'Ada' },
      { reference: 'f1e2', value: '4242' },
    ],
  };

  it('an operator deny of any origin the act touches denies it', async () => {
    const profile = await profileOf({
      ...DEFAULT_PROFILE_BODY,
      denies: [{ id: 'deny.widgets', tool: 'browser.act', origins: [WIDGETS], reason: 'no widgets' }],
    });
    const runOrigins = [RUN, WIDGETS];
    expect(decide(act15(fill, { runOrigins, frameOrigins: [RUN, WIDGETS] }), profile)).toMatchObject({ effect: 'deny', rule: 'deny.widgets' });
    expect(decide(act15(fill, { runOrigins, frameOrigins: [RUN] }), profile)).toMatchObject({ effect: 'approval', rule: 'act.approval' });
  });

  it('a drag between frames is asked about when both are of the run origins, and denied when one is not', async () => {
    const drag = { action: 'drag', revision: 1, reference: 'e3', to_reference: 'f1e2' };
    const profile = await profileOf();
    expect(decide(act15(drag, { runOrigins: [RUN, WIDGETS], frameOrigins: [RUN, WIDGETS] }), profile)).toMatchObject({ effect: 'approval' });
    expect(decide(act15(drag, { frameOrigins: [RUN, WIDGETS] }), profile)).toMatchObject({
      effect: 'deny',
      rule: 'hardline.frame_origin',
      reason: `an element the act touches is inside a frame of ${WIDGETS}, outside the run's origins`,
    });
  });
});

describe('boundedBrowserHover', () => {
  const holds = (proposed: unknown) => boundedBrowserHover('browser.act', 'external_write', proposed);

  it('holds for a bare hover on a reference or a point, with an optional postcondition', () => {
    expect(holds(hover)).toBe(true);
    expect(holds({ action: 'hover', revision: 1, point: { x: 0, y: 0 } })).toBe(true);
    expect(holds({ ...hover, postcondition: { success: { kind: 'location', path: '/menu' } } })).toBe(true);
  });

  it.each([
    ['an extra field', { ...hover, delta: 100 }],
    ['a text field', { ...hover, text: 'hi' }],
    ['a reference that is not a string', { ...hover, reference: 3 }],
    ['a point that is not an object', { action: 'hover', revision: 1, point: '10,20' }],
    ['a point that is an array', { action: 'hover', revision: 1, point: [10, 20] }],
    ['both a reference and a point', { ...hover, point: { x: 1, y: 1 } }],
    ['neither a reference nor a point', { action: 'hover', revision: 1 }],
    ['another action', { ...hover, action: 'click' }],
    ['a null', null],
    ['an array', [hover]],
  ])('rejects %s', (_what, proposed) => {
    expect(holds(proposed)).toBe(false);
  });

  it('holds only for browser.act classified as an external write', () => {
    expect(boundedBrowserHover('browser.observe', 'external_write', hover)).toBe(false);
    expect(boundedBrowserHover('browser.act', 'read', hover)).toBe(false);
  });
});
