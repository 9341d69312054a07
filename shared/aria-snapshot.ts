import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node as YamlNode } from 'yaml';
import { ariaKeyOf, type MutableNode, nodeOfKey, yamlKey, yamlValue } from './aria-key.ts';
import { readSnapshotLines } from './aria-line-reader.ts';

export { ariaKeyOf };

/**
 * A reader and writer for the text of Playwright's AI-mode aria snapshot
 * (`page.ariaSnapshot({mode: 'ai'})`), as it travels in an observation window. The text is YAML:
 * a sequence whose items are a node's key alone (`- button "Save" [ref=e3]`), a key with inline
 * text (`- paragraph [ref=e4]: Hello`), a key with a nested sequence of children and properties
 * (`- link [ref=e5]:` then `  - /url: /home`), or a text node (`- text: some text`); YAML quotes a
 * whole key or value when its characters need it (`- 'heading "Post #10" [level=2] [ref=e6]'`).
 * Text in Playwright's own one-item-per-line form is read directly (shared/aria-line-reader.ts);
 * any other text by the `yaml` package (the parser Playwright itself uses), the authority; the node
 * key's own grammar (`role "name" [attribute=value] ...`) is read in shared/aria-key.ts. Nodes cut off by the window are
 * simply not there, which is the point (DESIGN.md section 7).
 */

/** One node of the snapshot tree. */
export interface AriaNode {
  /** ARIA role, or `text` for a text node. */
  readonly role: string;
  /** Accessible name, when the snapshot gives one. */
  readonly name: string | undefined;
  /**
   * Bracketed attributes in the order the line gives them, `ref` excepted: `[checked]` is
   * `{checked: 'true'}`, `[level=3]` is `{level: '3'}`. `[inert]` is the host's own mark for a
   * node no person can reach (behind a modal dialog, or inside an `inert` subtree).
   */
  readonly attributes: Readonly<Record<string, string>>;
  readonly ref: string | undefined;
  /** Inline text after the colon, e.g. a paragraph's text or a text node's value. */
  readonly value: string | undefined;
  /** `/url`, `/placeholder` and similar properties listed under the node, in their order. */
  readonly props: Readonly<Record<string, string>>;
  readonly children: readonly AriaNode[];
  /** Index of the node's own line in the parsed text (0-based). */
  readonly line: number;
}

/** A sequence item line: its indentation and what follows `- `. */
const ITEM = /^( *)- /;
/** Key of the synthetic ancestors that hold a window starting deeper than its later lines. */
const ANCESTOR_KEY = 'window-ancestor';

/**
 * Parses snapshot text, a whole snapshot or any window of its lines, into its top-level nodes.
 * A window that starts inside a subtree (its first line deeper than later ones) is read as if
 * its missing ancestors were there, and its orphans become top-level nodes. Lines before the
 * first item and items that are not nodes are skipped; text that is not valid YAML (which
 * Playwright never emits) is read line by line, each line still by the YAML parser, so one bad
 * line costs only itself. Never throws.
 */
export function parseAriaSnapshot(snapshot: string): AriaNode[] {
  return parseLines(snapshot.split('\n'));
}

/**
 * {@link parseAriaSnapshot} of the text `lines` make when joined with line breaks, without
 * joining them when none of them holds a line break itself (a capture's lines, as split).
 */
export function parseAriaSnapshotLines(lines: readonly string[]): AriaNode[] {
  return lines.some((line) => line.includes('\n')) ? parseAriaSnapshot(lines.join('\n')) : parseLines(lines);
}

function parseLines(lines: readonly string[]): AriaNode[] {
  const first = lines.findIndex((line) => ITEM.test(line));
  if (first < 0) return [];
  const base = baseIndentOf(lines, first);
  // Playwright's own form is read directly; anything else, by the YAML parser (shared/aria-line-reader.ts).
  return readSnapshotLines(lines, first, base) ?? readWithYaml(lines, first, base);
}

/**
 * {@link parseAriaSnapshot} by the YAML parser alone, whatever the text's form: the authority the
 * direct reader is held equal to (test/edge/aria-snapshot-property.test.ts). Never throws.
 */
export function parseAriaSnapshotWithYaml(snapshot: string): AriaNode[] {
  const lines = snapshot.split('\n');
  const first = lines.findIndex((line) => ITEM.test(line));
  if (first < 0) return [];
  return readWithYaml(lines, first, baseIndentOf(lines, first));
}

function baseIndentOf(lines: readonly string[], first: number): number {
  let base = Number.POSITIVE_INFINITY;
  for (let index = first; index < lines.length; index++) {
    const indent = ITEM.exec(lines[index] ?? '')?.[1]?.length;
    if (indent !== undefined && indent < base) base = indent;
  }
  return base;
}

function readWithYaml(lines: readonly string[], first: number, base: number): AriaNode[] {
  const firstIndent = ITEM.exec(lines[first] ?? '')?.[1]?.length ?? base;
  const ancestors: string[] = [];
  for (let depth = base; depth + 2 <= firstIndent; depth += 2) ancestors.push(`${' '.repeat(depth - base)}- ${ANCESTOR_KEY}:`);
  const body = lines.slice(first).map((line) => line.slice(Math.min(base, leadingSpaces(line))));
  const text = [...ancestors, ...body].join('\n');
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { schema: 'failsafe', lineCounter, strict: false, uniqueKeys: false, prettyErrors: false });
  const lineOf = (node: YamlNode | null | undefined): number => {
    const offset = node?.range?.[0] ?? 0;
    return lineCounter.linePos(offset).line - 1 - ancestors.length + first;
  };
  if (document.errors.length > 0 || !isSeq(document.contents)) return parseLineByLine(lines, first);
  let items = document.contents.items as unknown[];
  const orphans: unknown[][] = [];
  for (let level = 0; level < ancestors.length; level++) {
    const holder = items[0];
    const held = isMap(holder) ? holder.items[0]?.value : undefined;
    orphans.unshift(items.slice(1));
    items = isSeq(held) ? (held.items as unknown[]) : [];
  }
  const roots: MutableNode[] = [];
  for (const item of [...items, ...orphans.flat()]) readItem(item, roots, undefined, lineOf);
  return roots;
}

function leadingSpaces(line: string): number {
  return line.length - line.trimStart().length;
}

/** Reads one sequence item into `into` (a child list) or, for a property, onto `parent`. */
function readItem(item: unknown, into: MutableNode[], parent: MutableNode | undefined, lineOf: (node: YamlNode | null | undefined) => number): void {
  if (isScalar(item)) {
    const node = nodeOfKey(String(item.value ?? ''), lineOf(item));
    if (node) into.push(node);
    return;
  }
  if (!isMap(item)) return;
  for (const pair of item.items) {
    if (!isScalar(pair.key)) continue;
    const key = String(pair.key.value ?? '');
    const value = pair.value as unknown;
    const scalarValue = isScalar(value) ? String(value.value ?? '') : undefined;
    if (key === 'text') {
      into.push(textNode(scalarValue ?? '', lineOf(pair.key)));
      continue;
    }
    if (key.startsWith('/')) {
      if (parent && key.length > 1 && scalarValue !== undefined) parent.props[key.slice(1)] = scalarValue;
      continue;
    }
    const node = nodeOfKey(key, lineOf(pair.key));
    if (!node) continue;
    if (scalarValue !== undefined && scalarValue !== '') node.value = scalarValue;
    if (isSeq(value)) for (const child of value.items) readItem(child, node.children, node, lineOf);
    into.push(node);
  }
}

function textNode(value: string, line: number): MutableNode {
  return { role: 'text', name: undefined, attributes: {}, ref: undefined, value, props: {}, children: [], line };
}

/** Fallback for text that is not one YAML document: structure from indentation, each line parsed alone. */
function parseLineByLine(lines: readonly string[], first: number): AriaNode[] {
  const roots: MutableNode[] = [];
  const stack: Array<{ depth: number; node: MutableNode }> = [];
  for (let index = first; index < lines.length; index++) {
    const line = lines[index] ?? '';
    const indent = ITEM.exec(line)?.[1]?.length;
    if (indent === undefined) continue;
    while (stack.length > 0 && stack[stack.length - 1]!.depth >= indent) stack.pop();
    const parent = stack[stack.length - 1]?.node;
    const single = parseDocument(line.trimStart(), { schema: 'failsafe', strict: false, prettyErrors: false });
    if (single.errors.length > 0 || !isSeq(single.contents)) continue;
    const found: MutableNode[] = [];
    for (const item of single.contents.items) readItem(item, found, parent, () => index);
    for (const node of found) {
      (parent ? parent.children : roots).push(node);
      stack.push({ depth: indent, node });
    }
  }
  return roots;
}

/**
 * The line of `node` itself at `depth` (two spaces each), exactly as Playwright's renderer writes
 * it: `- key`, `- key: value` or `- key:` (children and properties follow on their own lines).
 */
function ariaLineOf(node: AriaNode, depth: number): string {
  const indent = '  '.repeat(depth);
  if (node.role === 'text') return `${indent}- text: ${yamlValue(node.value ?? '')}`;
  const key = `${indent}- ${yamlKey(ariaKeyOf(node))}`;
  const hasProps = Object.keys(node.props).length > 0;
  if (node.value !== undefined && !hasProps && node.children.length === 0) return `${key}: ${yamlValue(node.value)}`;
  return hasProps || node.children.length > 0 ? `${key}:` : key;
}

/**
 * Renders nodes back to snapshot text in Playwright's own form (its quoting rules, two spaces per
 * level, properties before children). `renderAriaSnapshot(parseAriaSnapshot(text))` gives `text`
 * back for any snapshot Playwright emits.
 */
export function renderAriaSnapshot(nodes: readonly AriaNode[], depth = 0): string {
  const out: string[] = [];
  const visit = (node: AriaNode, level: number) => {
    out.push(ariaLineOf(node, level));
    if (node.role === 'text') return;
    for (const [name, value] of Object.entries(node.props)) out.push(`${'  '.repeat(level + 1)}- /${name}: ${yamlValue(value)}`);
    if (node.value !== undefined && (Object.keys(node.props).length > 0 || node.children.length > 0)) {
      out.push(`${'  '.repeat(level + 1)}- text: ${yamlValue(node.value)}`);
    }
    for (const child of node.children) visit(child, level + 1);
  };
  for (const node of nodes) visit(node, depth);
  return out.join('\n');
}

/** What {@link rewriteAriaLine} may change on a line's node. */
export type AriaLineNode = Pick<AriaNode, 'role' | 'name' | 'attributes' | 'ref'>;

/**
 * One snapshot line with its node's key changed by `change` (a name written in, an attribute
 * added) and everything else kept: indentation, the inline value, the trailing `:` of a node
 * with children. Quoting follows Playwright's rules for the new key. A line that is not a node
 * (a text node, a property, a blank) comes back unchanged.
 */
export function rewriteAriaLine(line: string, change: (node: AriaLineNode) => AriaLineNode): string {
  const indent = ITEM.exec(line)?.[1];
  if (indent === undefined) return line;
  const document = parseDocument(line.slice(indent.length), { schema: 'failsafe', strict: false, prettyErrors: false });
  if (document.errors.length > 0 || !isSeq(document.contents)) return line;
  const item = document.contents.items[0];
  let key: string;
  let suffix: string;
  if (isScalar(item)) {
    key = String(item.value ?? '');
    suffix = '';
  } else if (isMap(item) && isScalar(item.items[0]?.key)) {
    key = String(item.items[0].key.value ?? '');
    const value = item.items[0].value;
    // `key:` (children follow) reads as an empty scalar with no source of its own.
    const inline = isScalar(value) && value.range !== undefined && value.range !== null && value.range[1] > value.range[0];
    suffix = inline ? `: ${yamlValue(String(value.value ?? ''))}` : ':';
  } else {
    return line;
  }
  if (key === 'text' || key.startsWith('/')) return line;
  const node = nodeOfKey(key, 0);
  if (node === undefined) return line;
  return `${indent}- ${yamlKey(ariaKeyOf(change(node)))}${suffix}`;
}

/** Every node of the forest, depth first, parents before children. */
export function* walkAria(nodes: readonly AriaNode[]): Generator<AriaNode> {
  yield* walkDepthFirst(nodes, () => true);
}

/** The nodes of the forest `enter` accepts, depth first, parents before children; a refused node's subtree is skipped. Iterative: deep trees cost no nested generators. */
function* walkDepthFirst(nodes: readonly AriaNode[], enter: (node: AriaNode) => boolean): Generator<AriaNode> {
  const pending: AriaNode[] = [];
  for (let index = nodes.length - 1; index >= 0; index--) pending.push(nodes[index] as AriaNode);
  while (pending.length > 0) {
    const node = pending.pop() as AriaNode;
    if (!enter(node)) continue;
    yield node;
    for (let index = node.children.length - 1; index >= 0; index--) pending.push(node.children[index] as AriaNode);
  }
}

/** True for a node the host marked `[inert]`: behind a modal dialog or inside an inert subtree. */
export function isInert(node: AriaNode): boolean {
  return node.attributes.inert === 'true';
}

/**
 * Every node a person can reach, depth first: like {@link walkAria}, but an `[inert]` node and
 * its whole subtree are left out.
 */
export function* walkReachable(nodes: readonly AriaNode[]): Generator<AriaNode> {
  yield* walkDepthFirst(nodes, (node) => !isInert(node));
}

/**
 * The rendered text of a node and its subtree: its name, inline value and every descendant's,
 * joined by single spaces and with whitespace collapsed.
 */
export function textOf(node: AriaNode): string {
  const parts: string[] = [];
  const visit = (current: AriaNode) => {
    if (current.name) parts.push(current.name);
    if (current.value) parts.push(current.value);
    for (const child of current.children) visit(child);
  };
  visit(node);
  return parts.join(' ').replace(/\s+/g, ' ').trim();
}

/**
 * Role, accessible name, reference and attributes of one snapshot line
 * (`- button "Save draft" [ref=e3]`, or quoted as a whole: `- 'heading "Post #10" [ref=e4]'`), or
 * undefined for a text node or a line that is not a node.
 */
export function nodeOfSnapshotLine(
  line: string,
): { role: string; name: string | undefined; ref: string | undefined; attributes: Readonly<Record<string, string>> } | undefined {
  const node = parseAriaSnapshot(line.trimStart())[0];
  return node === undefined || node.role === 'text' ? undefined : { role: node.role, name: node.name, ref: node.ref, attributes: node.attributes };
}
