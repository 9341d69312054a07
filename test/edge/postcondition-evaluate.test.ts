import { describe, expect, it } from 'vitest';
import { Condition } from '../../shared/predicate.ts';
import { conditionStatus } from '../../shared/predicate-evaluation.ts';

// The evaluator on snapshot text of the shape Playwright's AI-mode aria snapshot produces.
// Real-Chromium cases (hidden duplicates, aria-disabled, toasts) are in test/e2e/postconditions.

const page = (snapshot: string, url = 'http://127.0.0.1:9/app/orders') => ({ url, snapshot });
const status = (condition: unknown, snapshot: string, url?: string) => conditionStatus(Condition.parse(condition), page(snapshot, url));

const FORM = `- main [ref=e1]:
  - heading "Orders" [level=1] [ref=e2]
  - button "Save" [ref=e3]
  - button "Submit" [disabled] [ref=e4]
  - checkbox "Express shipping" [checked] [ref=e5]
  - switch "Notifications" [ref=e6]
  - status [ref=e7]: Saved successfully
  - region "Summary" [ref=e8]:
    - paragraph [ref=e9]:
      - text: Total
      - strong [ref=e10]: "42"
  - table "Line items" [ref=e11]:
    - rowgroup [ref=e12]:
      - row "Item Qty" [ref=e13]:
        - columnheader "Item" [ref=e14]
        - columnheader "Qty" [ref=e15]
    - rowgroup [ref=e16]:
      - row "Widget 3" [ref=e17]:
        - cell "Widget" [ref=e18]
        - cell "3" [ref=e19]
      - row "Gadget 1" [ref=e20]:
        - cell "Gadget" [ref=e21]
        - cell "1" [ref=e22]
  - list "Todos" [ref=e23]:
    - listitem [ref=e24]: Buy milk
    - listitem [ref=e25]: Buy bread`;

describe('control predicates', () => {
  it('one visible control of the exact role and name is satisfied', () => {
    expect(status({ success: { kind: 'control', role: 'button', name: 'Save' } }, FORM)).toBe('satisfied');
  });
  it('a name that only starts the same is not a match', () => {
    expect(status({ success: { kind: 'control', role: 'button', name: 'Sav' } }, FORM)).toBe('not_observed');
  });
  it('the requested disabled and checked states must hold', () => {
    expect(status({ success: { kind: 'control', role: 'button', name: 'Submit', disabled: true } }, FORM)).toBe('satisfied');
    expect(status({ success: { kind: 'control', role: 'button', name: 'Save', disabled: true } }, FORM)).toBe('not_observed');
    expect(status({ success: { kind: 'control', role: 'checkbox', name: 'Express shipping', checked: true } }, FORM)).toBe('satisfied');
    expect(status({ success: { kind: 'control', role: 'switch', name: 'Notifications', checked: true } }, FORM)).toBe('not_observed');
  });
  it('two visible controls with the same role and name are ambiguous', () => {
    expect(status({ success: { kind: 'control', role: 'button', name: 'Save' } }, `${FORM}\n  - button "Save" [ref=e99]`)).toBe('ambiguous');
  });
});

// Lines as Playwright 1.65 prints them for real widgets (test/host/control-states.test.ts takes
// them from real Chromium): it marks a state only when true, so absence is read as false only
// where the role always carries the state.
const WIDGETS = `- main [ref=e1]:
  - tablist [ref=e2]:
    - tab "Profile" [ref=e3] [cursor=pointer]
    - tab "Billing" [selected] [ref=e4] [cursor=pointer]
  - heading [level=2] [ref=e5]:
    - button "Contact details" [ref=e6] [cursor=pointer]
  - heading [level=2] [ref=e7]:
    - button "Shipping details" [expanded] [ref=e8] [cursor=pointer]
  - button "Bold" [pressed] [ref=e9] [cursor=pointer]
  - button "Italic" [ref=e10] [cursor=pointer]
  - button "Underline" [pressed=mixed] [ref=e11] [cursor=pointer]
  - button "Strike" [pressed=false] [ref=e12] [cursor=pointer]
  - button "Menu" [expanded=false] [ref=e13] [cursor=pointer]
  - textbox "Day" [ref=e14]: 2026-12-15
  - textbox "Notes" [ref=e15]:
    - /placeholder: Anything else
  - spinbutton "Quantity" [ref=e16]: "3"
  - combobox "Country" [ref=e17]:
    - option "France"
    - option "Germany" [selected]
  - combobox "Search" [ref=e18]: Ger
  - combobox "Empty search" [ref=e19]
  - listbox "Sizes" [ref=e20]:
    - option "Small" [ref=e21]
    - option "Large" [selected] [ref=e22]
  - row "Order 1" [ref=e23]
  - textbox "Editor" [ref=e24]:
    - paragraph [ref=e25]: Dear Ada,`;

describe('control states of widgets: selected, expanded, pressed and value', () => {
  const control = (role: string, name: string, state: Record<string, unknown>) => status({ success: { kind: 'control', role, name, ...state } }, WIDGETS);

  it('a tab or option is selected only with [selected], and not selected without it', () => {
    expect(control('tab', 'Billing', { selected: true })).toBe('satisfied');
    expect(control('tab', 'Profile', { selected: true })).toBe('not_observed');
    expect(control('tab', 'Profile', { selected: false })).toBe('satisfied');
    expect(control('tab', 'Billing', { selected: false })).toBe('not_observed');
    expect(control('option', 'Large', { selected: true })).toBe('satisfied');
    expect(control('option', 'Small', { selected: false })).toBe('satisfied');
  });

  it('a role that need not be selectable is never guessed unselected', () => {
    expect(control('row', 'Order 1', { selected: false })).toBe('not_observed');
    expect(control('button', 'Bold', { selected: false })).toBe('not_observed');
  });

  it('expanded holds with [expanded]; a bare header is not read as collapsed, only an explicit [expanded=false] is', () => {
    expect(control('button', 'Shipping details', { expanded: true })).toBe('satisfied');
    expect(control('button', 'Contact details', { expanded: true })).toBe('not_observed');
    expect(control('button', 'Contact details', { expanded: false })).toBe('not_observed');
    expect(control('button', 'Shipping details', { expanded: false })).toBe('not_observed');
    expect(control('button', 'Menu', { expanded: false })).toBe('satisfied');
  });

  it('pressed holds with [pressed]; a button without the mark is not read as unpressed, and mixed is neither', () => {
    expect(control('button', 'Bold', { pressed: true })).toBe('satisfied');
    expect(control('button', 'Italic', { pressed: true })).toBe('not_observed');
    expect(control('button', 'Italic', { pressed: false })).toBe('not_observed');
    expect(control('button', 'Underline', { pressed: true })).toBe('not_observed');
    expect(control('button', 'Underline', { pressed: false })).toBe('not_observed');
    expect(control('button', 'Strike', { pressed: false })).toBe('satisfied');
    expect(control('button', 'Bold', { pressed: false })).toBe('not_observed');
  });

  it('checked keeps its 1.2.0 reading: a pressed toggle or a selected tab counts as checked', () => {
    expect(control('button', 'Bold', { checked: true })).toBe('satisfied');
    expect(control('tab', 'Billing', { checked: true })).toBe('satisfied');
    expect(control('button', 'Italic', { checked: false })).toBe('satisfied');
  });

  it('a text field holds exactly the value after its colon, and an empty field holds the empty string', () => {
    expect(control('textbox', 'Day', { value: '2026-12-15' })).toBe('satisfied');
    expect(control('textbox', 'Day', { value: '2026-12-1' })).toBe('not_observed');
    expect(control('textbox', 'Day', { value: '' })).toBe('not_observed');
    expect(control('textbox', 'Notes', { value: '' })).toBe('satisfied');
    expect(control('textbox', 'Notes', { value: 'Anything else' })).toBe('not_observed');
    expect(control('spinbutton', 'Quantity', { value: '3' })).toBe('satisfied');
    expect(control('textbox', 'Editor', { value: 'Dear Ada,' })).toBe('satisfied');
  });

  it('a select holds the option marked selected, a combobox input its typed text', () => {
    expect(control('combobox', 'Country', { value: 'Germany' })).toBe('satisfied');
    expect(control('combobox', 'Country', { value: 'France' })).toBe('not_observed');
    expect(control('combobox', 'Search', { value: 'Ger' })).toBe('satisfied');
  });

  it('a combobox showing neither a value nor options, and a role without a value, are not observed', () => {
    expect(control('combobox', 'Empty search', { value: '' })).toBe('not_observed');
    expect(control('combobox', 'Country', { value: '' })).toBe('not_observed');
    expect(control('button', 'Bold', { value: '' })).toBe('not_observed');
    expect(control('listbox', 'Sizes', { value: 'Large' })).toBe('not_observed');
  });

  it('every asked state must hold together', () => {
    expect(control('tab', 'Billing', { selected: true, disabled: false })).toBe('satisfied');
    expect(control('tab', 'Billing', { selected: true, disabled: true })).toBe('not_observed');
  });

  it('a widget in the wrong state next to a failure predicate that is seen is failure_observed', () => {
    expect(
      status(
        {
          success: { kind: 'control', role: 'tab', name: 'Profile', selected: true },
          failure: { kind: 'control', role: 'tab', name: 'Billing', selected: true },
        },
        WIDGETS,
      ),
    ).toBe('failure_observed');
  });

  it('two controls with the same role and name are ambiguous whatever their states', () => {
    expect(status({ success: { kind: 'control', role: 'button', name: 'Bold', pressed: true } }, `${WIDGETS}\n  - button "Bold" [ref=e99]`)).toBe('ambiguous');
  });
});

describe('text, region, location and row predicates', () => {
  it('text is an exact substring of the rendered text, across inline children', () => {
    expect(status({ success: { kind: 'text', text: 'Saved successfully' } }, FORM)).toBe('satisfied');
    expect(status({ success: { kind: 'text', text: 'Total 42' } }, FORM)).toBe('satisfied');
    expect(status({ success: { kind: 'text', text: 'saved successfully' } }, FORM)).toBe('not_observed');
  });
  it('a region is found by landmark role and exact name', () => {
    expect(status({ success: { kind: 'region', role: 'region', name: 'Summary' } }, FORM)).toBe('satisfied');
    expect(status({ success: { kind: 'region', role: 'navigation', name: 'Summary' } }, FORM)).toBe('not_observed');
  });
  it('location compares the exact URL or the exact path', () => {
    expect(status({ success: { kind: 'location', path: '/app/orders' } }, FORM)).toBe('satisfied');
    expect(status({ success: { kind: 'location', url: 'http://127.0.0.1:9/app/orders' } }, FORM)).toBe('satisfied');
    expect(status({ success: { kind: 'location', path: '/app' } }, FORM)).toBe('not_observed');
    expect(status({ success: { kind: 'location', path: '/app/orders#/done' } }, FORM, 'http://127.0.0.1:9/app/orders#/done')).toBe('satisfied');
  });
  it('a table row matches by column names and exact cell values', () => {
    expect(status({ success: { kind: 'row', collection: { role: 'table', name: 'Line items' }, cells: { Item: 'Widget', Qty: '3' } } }, FORM)).toBe(
      'satisfied',
    );
    expect(status({ success: { kind: 'row', collection: { role: 'table', name: 'Line items' }, cells: { Item: 'Widget', Qty: '4' } } }, FORM)).toBe(
      'not_observed',
    );
    expect(status({ success: { kind: 'row', collection: { role: 'table' }, cells: { Item: 'Gadget' } } }, FORM)).toBe('satisfied');
  });
  it('a list row matches the whole item text', () => {
    expect(status({ success: { kind: 'row', collection: { role: 'list', name: 'Todos' }, cells: { text: 'Buy milk' } } }, FORM)).toBe('satisfied');
    expect(status({ success: { kind: 'row', collection: { role: 'list', name: 'Todos' }, cells: { text: 'Buy' } } }, FORM)).toBe('not_observed');
  });
});

describe('failure predicates', () => {
  it('only the failure seen is failure_observed', () => {
    expect(status({ success: { kind: 'text', text: 'Order placed' }, failure: { kind: 'region', role: 'region', name: 'Summary' } }, FORM)).toBe(
      'failure_observed',
    );
  });
  it('success and failure both seen is ambiguous', () => {
    expect(status({ success: { kind: 'control', role: 'button', name: 'Save' }, failure: { kind: 'text', text: 'Saved successfully' } }, FORM)).toBe(
      'ambiguous',
    );
  });
});

describe('what the window does not carry is not evidence', () => {
  it('a control cut off by the window is not observed', () => {
    const window = FORM.split('\n').slice(0, 3).join('\n');
    expect(status({ success: { kind: 'control', role: 'checkbox', name: 'Express shipping' } }, window)).toBe('not_observed');
  });
});

describe('the predicate schema', () => {
  it.each([
    ['an unknown kind', { success: { kind: 'selector', css: '#x' } }],
    ['an empty name', { success: { kind: 'control', role: 'button', name: '' } }],
    ['a blank name', { success: { kind: 'control', role: 'button', name: '   ' } }],
    ['a regex-like extra field', { success: { kind: 'text', text: 'x', regex: 'a.*' } }],
    ['a script field', { success: { kind: 'control', role: 'button', name: 'Save', script: 'alert(1)' } }],
    ['an origin field', { success: { kind: 'location', path: '/', origin: 'http://x' } }],
    ['a role outside ARIA', { success: { kind: 'control', role: 'div', name: 'Save' } }],
    ['timeout 5001', { success: { kind: 'text', text: 'x' }, timeout_ms: 5001 }],
    ['timeout -1', { success: { kind: 'text', text: 'x' }, timeout_ms: -1 }],
    ['timeout as a string', { success: { kind: 'text', text: 'x' }, timeout_ms: '2000' }],
    ['both url and path', { success: { kind: 'location', url: 'http://x/', path: '/' } }],
    ['a name over 200 characters', { success: { kind: 'control', role: 'button', name: 'x'.repeat(201) } }],
    ['a value over 200 characters', { success: { kind: 'control', role: 'textbox', name: 'Day', value: 'x'.repeat(201) } }],
    ['pressed as a string', { success: { kind: 'control', role: 'button', name: 'Bold', pressed: 'mixed' } }],
  ])('rejects %s', (_name, condition) => {
    expect(Condition.safeParse(condition).success).toBe(false);
  });
});

describe('what no person can reach does not count as proof', () => {
  const MODAL = `- generic [ref=e1]:
  - button "Save" [inert] [ref=e2]
  - region "Archive" [inert] [ref=e3]:
    - button "Restore" [ref=e4]
  - list "Todos" [inert] [ref=e5]:
    - listitem [ref=e6]: Buy milk
  - dialog "Confirm" [ref=e7]:
    - button "Save" [ref=e8]
    - paragraph [ref=e9]: Unsaved changes`;

  it('a same-named button behind a modal dialog is not a second candidate', () => {
    expect(status({ success: { kind: 'control', role: 'button', name: 'Save' } }, MODAL)).toBe('satisfied');
  });

  it('a control inside an inert subtree is not observed, nor is an inert region or list row', () => {
    expect(status({ success: { kind: 'control', role: 'button', name: 'Restore' } }, MODAL)).toBe('not_observed');
    expect(status({ success: { kind: 'region', role: 'region', name: 'Archive' } }, MODAL)).toBe('not_observed');
    expect(status({ success: { kind: 'row', collection: { role: 'list', name: 'Todos' }, cells: { text: 'Buy milk' } } }, MODAL)).toBe('not_observed');
  });

  it('text behind a modal dialog is still text a person sees', () => {
    expect(status({ success: { kind: 'text', text: 'Buy milk' } }, MODAL)).toBe('satisfied');
  });
});

describe('accessible names that YAML has to quote', () => {
  const FEED = `- list "Posts" [ref=e1]:
  - listitem [ref=e2]:
    - 'heading "Post #10" [level=2] [ref=e3]'
    - paragraph [ref=e4]: "Hello: world"
  - listitem [ref=e5]:
    - 'heading "Post #11: the sequel" [level=2] [ref=e6]'
- 'button "Save: now" [ref=e7]'`;

  it('a heading and a button printed as quoted keys are controls by their names', () => {
    expect(status({ success: { kind: 'control', role: 'heading', name: 'Post #10' } }, FEED)).toBe('satisfied');
    expect(status({ success: { kind: 'control', role: 'button', name: 'Save: now' } }, FEED)).toBe('satisfied');
  });

  it('a list item holding a quoted heading and a quoted value is a row with their text', () => {
    expect(status({ success: { kind: 'row', collection: { role: 'list', name: 'Posts' }, cells: { text: 'Post #10 Hello: world' } } }, FEED)).toBe('satisfied');
    expect(status({ success: { kind: 'text', text: 'Post #11: the sequel' } }, FEED)).toBe('satisfied');
  });
});
