import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AriaNode, parseAriaSnapshot, renderAriaSnapshot, rewriteAriaLine } from '../../shared/aria-snapshot.ts';

// The snapshot reader against the writer over generated trees (shared/aria-snapshot.ts): any
// name, text or property value (every character, quotes and YAML's special ones included) reads
// back exactly as written, whole or cut into windows. The real-page suite is
// test/host/aria-snapshot-parser.test.ts; this one reaches the characters pages rarely carry.

const ROLES = ['button', 'link', 'heading', 'list', 'listitem', 'paragraph', 'generic', 'textbox', 'row', 'cell', 'dialog', 'iframe'];
const ATTRIBUTES = ['checked', 'disabled', 'expanded', 'active', 'selected', 'pressed', 'inert', 'aria-hidden'];

const text = fc.string({ unit: 'binary', maxLength: 24 });
const leafRef = fc.option(
  fc.integer({ min: 1, max: 9_999 }).map((n) => `e${n}`),
  { nil: undefined },
);

const node: fc.Memo<AriaNode> = fc.memo((depth) =>
  fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc
      .record({ role: fc.constant('text'), value: text.filter((value) => value !== '') })
      .map(({ role, value }): AriaNode => ({ role, name: undefined, attributes: {}, ref: undefined, value, props: {}, children: [], line: 0 })),
    fc
      .record({
        role: fc.constantFrom(...ROLES),
        name: fc.option(
          text.filter((name) => name !== ''),
          { nil: undefined },
        ),
        states: fc.uniqueArray(fc.constantFrom(...ATTRIBUTES), { maxLength: 3 }),
        level: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
        ref: leafRef,
        cursor: fc.boolean(),
        value: fc.option(
          text.filter((value) => value !== ''),
          { nil: undefined },
        ),
        url: fc.option(text, { nil: undefined }),
        children: depth > 3 ? fc.constant([]) : fc.array(node(depth + 1), { maxLength: 3 }),
      })
      .map(({ role, name, states, level, ref, cursor, value, url, children }): AriaNode => {
        const attributes: Record<string, string> = {};
        for (const state of states) attributes[state] = 'true';
        if (level !== undefined) attributes.level = String(level);
        if (cursor && ref !== undefined) attributes.cursor = 'pointer';
        const props: Record<string, string> = url !== undefined ? { url } : {};
        // Playwright writes inline text only for a node without children or properties.
        const inline = children.length === 0 && url === undefined ? value : undefined;
        return { role, name, attributes, ref, value: inline, props, children, line: 0 };
      }),
  ),
);

/** A node without line numbers, for comparing what was read with what was written. */
function shape(nodes: readonly AriaNode[]): unknown[] {
  return nodes.map((n) => ({ role: n.role, name: n.name, attributes: n.attributes, ref: n.ref, value: n.value, props: n.props, children: shape(n.children) }));
}

describe('the snapshot reader over generated trees', () => {
  it('reads back every tree the writer writes, whatever characters its names and text hold', () => {
    fc.assert(
      fc.property(fc.array(node(0), { minLength: 1, maxLength: 4 }), (forest) => {
        const written = renderAriaSnapshot(forest);
        const read = parseAriaSnapshot(written);
        expect(shape(read)).toEqual(shape(forest));
        expect(renderAriaSnapshot(read)).toBe(written);
      }),
      { numRuns: 400 },
    );
  });

  it('reads any window of the written text without throwing, each node as the whole text reads that line', () => {
    fc.assert(
      fc.property(fc.array(node(0), { minLength: 1, maxLength: 3 }), fc.nat(), fc.integer({ min: 1, max: 8 }), (forest, start, size) => {
        const lines = renderAriaSnapshot(forest).split('\n');
        const from = start % lines.length;
        const whole = new Map<number, AriaNode>();
        const index = (nodes: readonly AriaNode[]) => {
          for (const n of nodes) {
            whole.set(n.line, n);
            index(n.children);
          }
        };
        index(parseAriaSnapshot(lines.join('\n')));
        const visit = (nodes: readonly AriaNode[]) => {
          for (const n of nodes) {
            const same = whole.get(from + n.line);
            expect({ role: n.role, name: n.name, ref: n.ref, attributes: n.attributes }).toEqual({
              role: same?.role,
              name: same?.name,
              ref: same?.ref,
              attributes: same?.attributes,
            });
            visit(n.children);
          }
        };
        visit(parseAriaSnapshot(lines.slice(from, from + size).join('\n')));
      }),
      { numRuns: 400 },
    );
  });

  it('a line rewritten with any name reads back with that name and keeps its value and its colon', () => {
    fc.assert(
      fc.property(
        text.filter((name) => name !== ''),
        fc.constantFrom('  - link [ref=e3] [cursor=pointer]:', '- button [ref=e4]', '    - paragraph [ref=e5]: "Hello: world"'),
        (name, line) => {
          const rewritten = rewriteAriaLine(line, (parsed) => ({ ...parsed, name }));
          const [read] = parseAriaSnapshot(rewritten.trimStart());
          expect(read?.name).toBe(name);
          expect(rewritten.endsWith(':')).toBe(line.endsWith(':'));
          if (line.includes('Hello')) expect(read?.value).toBe('Hello: world');
        },
      ),
      { numRuns: 300 },
    );
  });
});
