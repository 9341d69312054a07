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
