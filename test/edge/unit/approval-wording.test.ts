import { describe, expect, it } from 'vitest';
import { type ActTarget, describeAct } from '../../../shared/act-target.ts';

// An approval is read by a person: quoted text from the agent (values) or the page (names,
// titles) must not be able to make the sentence read other than what it says. Invisible format
// characters (bidirectional overrides, zero-width spaces), C1 controls and line separators are
// shown escaped, never rendered.

const PAGE = 'http://127.0.0.1:8080/pay';
const target = (overrides: Partial<ActTarget> = {}): ActTarget => ({
  reference: 'e2',
  role: 'textbox',
  name: 'Amount',
  frame_origin: 'http://127.0.0.1:8080',
  page_url: PAGE,
  page_title: 'Pay',
  ...overrides,
});
const UNSHOWN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

describe('the words of an approval', () => {
  it('show bidirectional overrides, zero-width and line-separator characters of quoted text escaped', () => {
    const typed = describeAct({ action: 'type', revision: 1, reference: 'e2', text: '10\u202e0001' }, target());
    expect(typed).toBe(`Type "10\\u202e0001" into the textbox "Amount" on "Pay" (${PAGE})`);
    const named = describeAct(
      { action: 'click', revision: 1, reference: 'e2' },
      target({ role: 'button', name: 'Cancel\u2066\u200b', page_title: 'Pay\u2028Now\u0085' }),
    );
    expect(named).toBe(`Click the button "Cancel\\u2066\\u200b" on "Pay\\u2028Now\\u0085" (${PAGE})`);
    const filled = describeAct(
      { action: 'fill_form', revision: 1, reference: 'e2', fields: [{ reference: 'e2', value: 'a\u202db' }] },
      target({ fields: [{ reference: 'e2', role: 'textbox', name: 'Amount\u061c', frame_origin: 'http://127.0.0.1:8080', value: 'a\u202db' }] }),
    );
    expect(filled).toBe(`Fill in a form on "Pay" (${PAGE}): Type "a\\u202db" into the textbox "Amount\\u061c"`);
    // Tag characters (outside the BMP) hide text from a reader: both halves are shown escaped.
    const tagged = describeAct({ action: 'type', revision: 1, reference: 'e2', text: 'ok\u{e0041}' }, target());
    expect(tagged).toBe(`Type "ok\\udb40\\udc41" into the textbox "Amount" on "Pay" (${PAGE})`);
    for (const words of [typed, named, filled, tagged]) expect(words).not.toMatch(UNSHOWN);
  });

  it('keep ordinary unicode as it is', () => {
    expect(describeAct({ action: 'type', revision: 1, reference: 'e2', text: 'Zoë 😀 東京' }, target())).toBe(
      `Type "Zoë 😀 東京" into the textbox "Amount" on "Pay" (${PAGE})`,
    );
  });
});
