import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { needsQuotes } from '../../shared/aria-key.ts';
import { readSnapshotLines } from '../../shared/aria-line-reader.ts';
import { type AriaNode, parseAriaSnapshot, parseAriaSnapshotLines, parseAriaSnapshotWithYaml, renderAriaSnapshot } from '../../shared/aria-snapshot.ts';

// The direct reader of Playwright's one-item-per-line form (shared/aria-line-reader.ts) against
// the YAML parser it stands in for: over written snapshots, their windows, and text changed in
// the ways a page or a corrupted frame could change it (any line replaced, indented, cut,
// commented, quoted differently), both readers give the same nodes with the same line numbers.

const ROLES = ['button', 'link', 'heading', 'list', 'listitem', 'paragraph', 'generic', 'textbox', 'text'];
/** Text mostly of the characters that decide quoting (quotes, colons, hashes, dashes, backslashes, digits), sometimes any character. */
const text = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.string({
      unit: fc.constantFrom(
        'a',
        'b',
        ' ',
        '"',
        "'",
        ':',
        '#',
        '\\',
        '-',
        '\t',
        'é',
        '[',
        ']',
        '{',
        '1',
        '.',
        '/',
        '&',
        '*',
        '!',
        '|',
        '>',
        '%',
        '@',
        '`',
        '?',
        ',',
      ),
      maxLength: 12,
    }),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
);

const node: fc.Memo<AriaNode> = fc.memo((depth) =>
  fc
    .record({
      role: fc.constantFrom(...ROLES),
      name: fc.option(
        text.filter((name) => name !== ''),
        { nil: undefined },
      ),
      ref: fc.option(
        fc.integer({ min: 1, max: 999 }).map((n) => `e${n}`),
        { nil: undefined },
      ),
      value: fc.option(text, { nil: undefined }),
      url: fc.option(text, { nil: undefined }),
      children: depth > 2 ? fc.constant([]) : fc.array(node(depth + 1), { maxLength: 3 }),
    })
    .map(({ role, name, ref, value, url, children }): AriaNode => {
      if (role === 'text') return { role, name: undefined, attributes: {}, ref: undefined, value: value ?? 'x', props: {}, children: [], line: 0 };
      const props: Record<string, string> = url !== undefined ? { url } : {};
      return { role, name, attributes: ref ? { cursor: 'pointer' } : {}, ref, value: value || undefined, props, children, line: 0 };
    }),
);

/** Lines as a page or a damaged frame might leave them: each one kept, or changed in one of these ways. */
const damage = fc.constantFrom(
  (line: string) => line,
  (line: string) => line,
  (line: string) => line,
  (line: string) => ` ${line}`,
  (line: string) => `  ${line}`,
  (line: string) => line.slice(0, Math.max(0, line.length - 3)),
  (line: string) => `${line} # comment`,
  (line: string) => `${line}:`,
  (line: string) => `${line}: "a\\u00e9\\x41\\N"`,
  (line: string) => line.replace('- ', '- "').concat('"'),
  (line: string) => line.replace(/"/g, "'"),
  (line: string) => line.replace('- ', ''),
  (line: string) => `${line}\n`,
  (line: string) => `${line}\t`,
  () => '',
  () => "- 'quoted '' key [ref=e9]': plain value",
  () => '- /url: "x"',
  () => '-',
);

/** Texts the direct reader read itself, and all texts compared: the comparison must not be vacuous. */
const tally = { direct: 0, all: 0 };

function readers(textIn: string) {
  const lines = textIn.split('\n');
  const first = lines.findIndex((line) => /^ *- /.test(line));
  const base = Math.min(...lines.flatMap((line) => (/^( *)- /.exec(line)?.[1]?.length ?? []) as number[]));
  tally.all += 1;
  if (first >= 0 && readSnapshotLines(lines, first, base) !== undefined) tally.direct += 1;
  return { direct: parseAriaSnapshot(textIn), yaml: parseAriaSnapshotWithYaml(textIn) };
}

describe('the direct snapshot reader against the YAML parser', () => {
  it('reads every written snapshot and any window of it exactly as the YAML parser does, line numbers included', () => {
    fc.assert(
      fc.property(fc.array(node(0), { minLength: 1, maxLength: 4 }), fc.nat(), fc.integer({ min: 1, max: 12 }), (forest, start, size) => {
        const lines = renderAriaSnapshot(forest).split('\n');
        const whole = readers(lines.join('\n'));
        expect(whole.direct).toEqual(whole.yaml);
        const from = start % lines.length;
        const window = readers(lines.slice(from, from + size).join('\n'));
        expect(window.direct).toEqual(window.yaml);
      }),
      { numRuns: 500 },
    );
    // Most written snapshots are in Playwright's own form, read directly.
    expect(tally.direct / tally.all).toBeGreaterThan(0.5);
  });

  it('reads changed and damaged text exactly as the YAML parser does (or leaves it to that parser)', () => {
    fc.assert(
      fc.property(fc.array(node(0), { minLength: 1, maxLength: 3 }), fc.array(damage, { minLength: 1, maxLength: 40 }), (forest, changes) => {
        const lines = renderAriaSnapshot(forest)
          .split('\n')
          .map((line, index) => (changes[index % changes.length] as (line: string) => string)(line));
        const read = readers(lines.join('\n'));
        expect(read.direct).toEqual(read.yaml);
      }),
      { numRuns: 800 },
    );
  });

  it("reads a capture's lines, as split or holding line breaks of their own, as it reads the text they join into", () => {
    fc.assert(
      fc.property(fc.array(node(0), { minLength: 1, maxLength: 3 }), fc.array(damage, { minLength: 1, maxLength: 40 }), (forest, changes) => {
        const lines = renderAriaSnapshot(forest)
          .split('\n')
          .map((line, index) => (changes[index % changes.length] as (line: string) => string)(line));
        expect(parseAriaSnapshotLines(lines)).toEqual(parseAriaSnapshot(lines.join('\n')));
      }),
      { numRuns: 500 },
    );
  });

  it('leaves a line blank to JavaScript but not to YAML (an em space, a no-break space, a carriage return) to the YAML parser', () => {
    // String.prototype.trim drops these; YAML reads them as content (a value continued onto
    // the line) or as an error (the whole text then read line by line).
    const samples = [
      '- paragraph [ref=e1]: b\n   \u2003',
      '- paragraph [ref=e1]:\n     \u00a0',
      '- button [ref=e1] x:\n \u2003\n  - text: child',
      '- button [ref=e1] x:\n\r\n  - text: child',
      '- button [ref=e1] x:\n  \ufeff\n  - text: child',
    ];
    for (const sample of samples) {
      const read = readers(sample);
      expect(read.direct, JSON.stringify(sample)).toEqual(read.yaml);
    }
  });

  it('reads Playwright-style lines with every escape and quoting form as the YAML parser does', () => {
    const sample = [
      '- heading "Post 10: \\"quoted\\"" [level=2] [ref=e1]',
      "- 'link \"It''s: here\" [ref=e2] [cursor=pointer]':",
      '  - /url: /a?b=c#d',
      '  - text: "tab\\tand\\u00e9 and \\x41 and \\\\ and \\/"',
      '- paragraph [ref=e3]: "- starts with a dash"',
      '- paragraph [ref=e4]: "12"',
      '- paragraph [ref=e5]: "true"',
      '- button "a:b" [ref=e6]',
      '- textbox "Search" [ref=e7]: ""',
      '- generic [ref=e8]:',
      '- list [ref=e9]:',
      '  - listitem [ref=e10]: one',
      '  - listitem [ref=e11]:',
      '    - text: two',
      '    - link "three" [ref=e12]',
    ].join('\n');
    const read = readers(sample);
    expect(readSnapshotLines(sample.split('\n'), 0, 0)).toBeDefined();
    expect(read.direct).toEqual(read.yaml);
    expect(read.direct.length).toBeGreaterThan(5);
  });
});

describe("Playwright's quoting rules", () => {
  it('quote every word YAML reads as a boolean or null, in any letter case, and no longer word that starts like one', () => {
    for (const keyword of ['y', 'N', 'yes', 'Yes', 'NO', 'true', 'True', 'FALSE', 'on', 'oN', 'Off', 'null', 'NULL', '~']) {
      expect(needsQuotes(keyword), keyword).toBe(true);
    }
    for (const word of ['Yesterday', 'nullable', 'Onward', 'Offer', 'Trueness', 'falsehood', 'Nope']) expect(needsQuotes(word), word).toBe(false);
  });
});
