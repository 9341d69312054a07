/**
 * A reader for the text of Playwright's AI-mode aria snapshot (`page.ariaSnapshot({mode: 'ai'})`),
 * as it travels in an observation window. Lines look like
 * `  - checkbox "Done" [checked] [ref=e7]: inline text`, `- text: some text` or `- /url: ...`;
 * two spaces of indentation per level. It reads only what the window carries: nodes cut off by
 * the window simply are not there, which is the point (DESIGN.md section 7).
 */

/** One node of the snapshot tree. */
export interface AriaNode {
  /** ARIA role, or `text` for a text node. */
  readonly role: string;
  /** Accessible name, when the snapshot gives one. */
  readonly name: string | undefined;
  /** Bracketed attributes: `[checked]` is `{checked: 'true'}`, `[level=3]` is `{level: '3'}`. */
  readonly attributes: Readonly<Record<string, string>>;
  readonly ref: string | undefined;
  /** Inline text after the colon, e.g. a paragraph's text or a text node's value. */
  readonly value: string | undefined;
  /** `/url`, `/placeholder` and similar properties listed under the node. */
  readonly props: Readonly<Record<string, string>>;
  readonly children: readonly AriaNode[];
}

interface MutableNode {
  role: string;
  name: string | undefined;
  attributes: Record<string, string>;
  ref: string | undefined;
  value: string | undefined;
  props: Record<string, string>;
  children: MutableNode[];
}

const LINE = /^(\s*)- (.*)$/;

/** Parses snapshot text into its top-level nodes; lines it does not understand are skipped. */
export function parseAriaSnapshot(snapshot: string): AriaNode[] {
  const roots: MutableNode[] = [];
  const stack: Array<{ depth: number; node: MutableNode }> = [];
  for (const line of snapshot.split('\n')) {
    const match = LINE.exec(line);
    if (!match) continue;
    const depth = (match[1] ?? '').length;
    const body = match[2] ?? '';
    while (stack.length > 0 && stack[stack.length - 1]!.depth >= depth) stack.pop();
    const parent = stack[stack.length - 1]?.node;
    if (body.startsWith('/')) {
      const colon = body.indexOf(':');
      if (parent && colon > 1) parent.props[body.slice(1, colon)] = unquote(body.slice(colon + 1).trim());
      continue;
    }
    const node = parseNode(body);
    if (!node) continue;
    (parent ? parent.children : roots).push(node);
    stack.push({ depth, node });
  }
  return roots;
}

function parseNode(body: string): MutableNode | undefined {
  if (body.startsWith('text:')) {
    return { role: 'text', name: undefined, attributes: {}, ref: undefined, value: unquote(body.slice(5).trim()), props: {}, children: [] };
  }
  const role = /^[a-z]+/.exec(body)?.[0];
  if (!role) return undefined;
  let rest = body.slice(role.length);
  let name: string | undefined;
  const quoted = /^ "((?:[^"\\]|\\.)*)"/.exec(rest);
  if (quoted) {
    name = unescapeQuoted(quoted[1] ?? '');
    rest = rest.slice(quoted[0].length);
  }
  const attributes: Record<string, string> = {};
  for (;;) {
    const attribute = /^ \[([a-z-]+)(?:=([^\]]*))?\]/.exec(rest);
    if (!attribute) break;
    attributes[attribute[1]!] = attribute[2] ?? 'true';
    rest = rest.slice(attribute[0].length);
  }
  const ref = attributes.ref;
  delete attributes.ref;
  let value: string | undefined;
  if (rest.startsWith(':')) {
    const inline = rest.slice(1).trim();
    if (inline !== '') value = unquote(inline);
  }
  return { role, name, attributes, ref, value, props: {}, children: [] };
}

function unescapeQuoted(text: string): string {
  return text.replace(/\\(.)/g, '$1');
}

/** YAML-ish scalars: a double-quoted value loses its quotes and escapes. */
function unquote(text: string): string {
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) {
    try {
      return JSON.parse(text) as string;
    } catch {
      return unescapeQuoted(text.slice(1, -1));
    }
  }
  return text;
}

/** Every node of the forest, depth first, parents before children. */
export function* walkAria(nodes: readonly AriaNode[]): Generator<AriaNode> {
  for (const node of nodes) {
    yield node;
    yield* walkAria(node.children);
  }
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
 * Role and accessible name of one snapshot line (`- button "Save draft" [ref=e3]`), or undefined
 * for a text node or a line that is not a node. A line YAML had to quote as a whole
 * (`- 'heading "Post #10" [ref=e4]'`, for names with `#`, `:` and the like) is unquoted first.
 */
export function nodeOfSnapshotLine(line: string): { role: string; name: string | undefined; ref: string | undefined } | undefined {
  const quoted = /^(\s*- )'(.*)'(:?)$/.exec(line);
  const plain = quoted ? `${quoted[1]}${(quoted[2] ?? '').replace(/''/g, "'")}${quoted[3]}` : line;
  const node = parseAriaSnapshot(plain.trimStart())[0];
  return node === undefined || node.role === 'text' ? undefined : { role: node.role, name: node.name, ref: node.ref };
}
