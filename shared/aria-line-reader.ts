import { type MutableNode, needsQuotes, nodeOfKey } from './aria-key.ts';

/**
 * The direct reader of snapshot text in the form Playwright writes it (issue 35: a YAML parse of
 * a 2,000-control snapshot costs about 40 ms, more than a third of taking the snapshot): one
 * sequence item per line, two spaces per level, each item `- key`, `- key:` (children follow) or
 * `- key: value`, a key plain or single-quoted, a value plain or double-quoted. A line is read
 * here only when YAML would read it the same way beyond doubt: a plain key or value only when
 * Playwright's own quoting rules would leave it plain ({@link needsQuotes}), a double-quoted value
 * only with the escapes JSON also has (and `\xHH`), children only under `- key:` and exactly one
 * level deeper. Anything else (a comment, a continuation line, another escape, odd indentation,
 * a key YAML would not take as an implicit key) makes {@link readSnapshotLines} answer undefined,
 * and the caller reads the text with the YAML parser, which stays the authority
 * (shared/aria-snapshot.ts `parseAriaSnapshot`; a property test holds the two readers equal).
 */

/** A sequence item line: its indentation and what follows `- `. */
const ITEM = /^( *)- (.*)$/;
/** A line the direct reader skips as blank: spaces alone. */
const BLANK = /^ *$/;
/** YAML's limit on an implicit key, in characters. */
const MAX_IMPLICIT_KEY = 1024;

/** One item line as read: its key, and either no colon, a colon alone, or a colon and a value. */
interface ItemText {
  readonly key: string;
  readonly colon: boolean;
  readonly value: string | undefined;
}

/** What an open line holds: the node its children join, or nothing (their items are dropped, as YAML's reading drops them). */
interface OpenItem {
  readonly depth: number;
  readonly holder: MutableNode | undefined;
  /** Whether deeper lines may follow it (`- key:` with nothing after the colon). */
  readonly opens: boolean;
}

/**
 * The top-level nodes of `lines[first..]` read directly (see the module's description), with
 * `line` the index into `lines`; `base` is the smallest item indentation (a window may start
 * deeper than its later lines: nodes whose parent is not in the text are top-level). Undefined
 * when any line is outside the direct form. Pure; never throws.
 */
export function readSnapshotLines(lines: readonly string[], first: number, base: number): MutableNode[] | undefined {
  // Each line read once: its depth and its item's text.
  const items: Array<{ readonly line: number; readonly depth: number; readonly text: string }> = [];
  for (let index = first; index < lines.length; index++) {
    const line = lines[index] as string;
    const match = ITEM.exec(line);
    if (match === null) {
      // Blank only when spaces alone: what String.prototype.trim also drops (a tab, a carriage
      // return, a no-break or em space) YAML may read as content or an error.
      if (BLANK.test(line)) continue;
      return undefined;
    }
    const indent = (match[1] as string).length - base;
    if (indent < 0 || indent % 2 !== 0) return undefined;
    items.push({ line: index, depth: indent / 2, text: match[2] as string });
  }
  const roots: MutableNode[] = [];
  const open: OpenItem[] = [];
  for (let position = 0; position < items.length; position++) {
    const { line, depth, text } = items[position] as (typeof items)[number];
    while (open.length > 0 && (open[open.length - 1] as OpenItem).depth >= depth) open.pop();
    const parent = open[open.length - 1];
    if (parent !== undefined && (parent.depth !== depth - 1 || !parent.opens)) return undefined;
    const item = itemTextOf(text);
    if (item === undefined) return undefined;
    const next = items[position + 1];
    const placed = placeItem(item, line, parent, next !== undefined && next.depth > depth);
    if (placed.node !== undefined) (parent === undefined ? roots : (parent.holder?.children ?? [])).push(placed.node);
    open.push({ depth, holder: placed.holder, opens: item.colon && item.value === undefined });
  }
  return roots;
}

/**
 * What one item becomes, as YAML's reading makes it (shared/aria-snapshot.ts `readItem`): `node`
 * to add to its parent's children (a node, or a text node), `holder` the node its children
 * join. A property (`/url: ...`) is set on the parent's node; an item that is not a node, and
 * children of anything but a node, are dropped.
 */
function placeItem(item: ItemText, line: number, parent: OpenItem | undefined, hasChildren: boolean): { node?: MutableNode; holder?: MutableNode } {
  if (!item.colon) {
    const node = nodeOfKey(item.key, line);
    return node === undefined ? {} : { node };
  }
  // `key:` followed by its children is a sequence; followed by nothing, an empty scalar.
  const scalar = hasChildren ? undefined : (item.value ?? '');
  if (item.key === 'text') {
    return { node: { role: 'text', name: undefined, attributes: {}, ref: undefined, value: scalar ?? '', props: {}, children: [], line } };
  }
  if (item.key.startsWith('/')) {
    if (parent?.holder !== undefined && item.key.length > 1 && scalar !== undefined) parent.holder.props[item.key.slice(1)] = scalar;
    return {};
  }
  const node = nodeOfKey(item.key, line);
  if (node === undefined) return {};
  if (scalar !== undefined && scalar !== '') node.value = scalar;
  return { node, holder: hasChildren ? node : undefined };
}

/** One item's text (after `- `) read, or undefined when it is not in the direct form. */
function itemTextOf(text: string): ItemText | undefined {
  if (text.startsWith("'")) {
    const quoted = singleQuoted(text);
    if (quoted === undefined) return undefined;
    return afterKey(quoted.key, text.slice(quoted.end));
  }
  const colonSpace = text.indexOf(': ');
  if (colonSpace >= 0) return plainKeyWith(text.slice(0, colonSpace), `: ${text.slice(colonSpace + 2)}`);
  if (text.endsWith(':')) return plainKeyWith(text.slice(0, -1), ':');
  return needsQuotes(text) ? undefined : { key: text, colon: false, value: undefined };
}

function plainKeyWith(key: string, rest: string): ItemText | undefined {
  if (needsQuotes(key)) return undefined;
  return afterKey(key, rest);
}

/** What follows a key: nothing, `:` alone, or `: ` and a value. */
function afterKey(key: string, rest: string): ItemText | undefined {
  if (rest === '') return { key, colon: false, value: undefined };
  if (key.length > MAX_IMPLICIT_KEY) return undefined;
  if (rest === ':') return { key, colon: true, value: undefined };
  if (!rest.startsWith(': ')) return undefined;
  const value = scalarOf(rest.slice(2));
  return value === undefined ? undefined : { key, colon: true, value };
}

/** A single-quoted key at the start of `text` (`''` is one `'`) and where it ends. */
function singleQuoted(text: string): { key: string; end: number } | undefined {
  let index = 1;
  for (;;) {
    const quote = text.indexOf("'", index);
    if (quote < 0) return undefined;
    if (text[quote + 1] === "'") {
      index = quote + 2;
      continue;
    }
    const key = text.slice(1, quote).replaceAll("''", "'");
    // Line breaks and other control characters are left to YAML.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must go to the YAML parser
    return /[\x00-\x08\x0a-\x1f\x7f-\x9f]/.test(key) ? undefined : { key, end: quote + 1 };
  }
}

/** A value: plain when Playwright would leave it plain, or double-quoted with JSON's escapes and `\xHH`. */
function scalarOf(text: string): string | undefined {
  if (!text.startsWith('"')) return needsQuotes(text) ? undefined : text;
  if (text.length < 2 || !text.endsWith('"')) return undefined;
  const body = text.slice(1, -1);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: raw control characters are left to the YAML parser
  if (/[\x00-\x08\x0a-\x1f\x7f-\x9f]/.test(body)) return undefined;
  let out = '';
  for (let index = 0; index < body.length; index++) {
    const character = body[index] as string;
    if (character === '"') return undefined;
    if (character !== '\\') {
      out += character;
      continue;
    }
    const escaped = body[index + 1];
    const simple = escaped === undefined ? undefined : SIMPLE_ESCAPES[escaped];
    if (simple !== undefined) {
      out += simple;
      index += 1;
      continue;
    }
    const digits = escaped === 'x' ? 2 : escaped === 'u' ? 4 : 0;
    const hex = body.slice(index + 2, index + 2 + digits);
    if (digits === 0 || !new RegExp(`^[0-9a-fA-F]{${digits}}$`).test(hex)) return undefined;
    out += String.fromCharCode(Number.parseInt(hex, 16));
    index += 1 + digits;
  }
  return out;
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = { '\\': '\\', '"': '"', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
