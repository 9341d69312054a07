import { describe, expect, it } from 'vitest';
import { markInert, ownRefOfLine } from '../../browser-host/snapshot/marks.ts';
import { parseAriaSnapshot, walkReachable } from '../../shared/aria-snapshot.ts';

// The host's marks on snapshot lines (browser-host/snapshot/marks.ts) as pure functions: a line's
// own ref is never one its name, text or URL carries, and what a modal puts out of reach is
// decided by the snapshot's structure.

const PAGE = [
  '- generic [ref=e1]:',
  '  - textbox "Search" [ref=e2]',
  '  - button "x [ref=e7]" [ref=e4]',
  '  - link "Remove card" [ref=e5]:',
  '    - /url: /delete?x=[ref=e7]',
  '  - button "Delete"',
  '  - dialog [ref=e7]:',
  '    - textbox "Card number" [ref=e8]',
  '    - paragraph [ref=e9]: "[ref=e2] [ref=e4]"',
  `  - 'heading "Post #1 [ref=e8]" [level=2] [ref=e10]'`,
];

describe('the host marks what a modal puts out of reach', () => {
  it('reads each line’s own ref only: not from its name, its text or its URL', () => {
    expect(PAGE.map(ownRefOfLine)).toEqual(['e1', 'e2', 'e4', 'e5', undefined, undefined, 'e7', 'e8', 'e9', 'e10']);
  });

  it('marks every node outside the modal but its ancestors, refs or not, and nothing inside it', () => {
    const marked = markInert(PAGE, new Set(['e7']), new Set());
    const reachable = [...walkReachable(parseAriaSnapshot(marked.join('\n')))].map((node) => node.name ?? node.role);
    expect(reachable).toEqual(['generic', 'dialog', 'Card number', 'paragraph']);
  });

  it('writes no modal marks when the modal it read is not in the snapshot (the page closed it meanwhile)', () => {
    expect(markInert(PAGE, new Set(['e99']), new Set())).toEqual(PAGE);
  });

  it('marks an inert node and everything under it', () => {
    const marked = markInert(PAGE, undefined, new Set(['e5']));
    expect(marked[3]).toContain('[inert]');
    expect(marked[2]).not.toContain('[inert]');
  });
});
