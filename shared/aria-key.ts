/**
 * The grammar of one node key of Playwright's AI-mode aria snapshot (`role "name" [attribute=value]
 * ... [ref=eN] [cursor=pointer]`) and Playwright's YAML quoting rules for keys and values: what
 * shared/aria-snapshot.ts and shared/aria-line-reader.ts read and write lines with.
 */

/** A node of the snapshot tree while it is read (shared/aria-snapshot.ts `AriaNode`, before it is frozen). */
export interface MutableNode {
  role: string;
  name: string | undefined;
  attributes: Record<string, string>;
  ref: string | undefined;
  value: string | undefined;
  props: Record<string, string>;
  children: MutableNode[];
  line: number;
}

/**
 * Reads a node key, `role "name" [attribute] [attribute=value] ...`, as Playwright writes it (the
 * name is a JSON string literal), into a node at `line`; undefined when the key is not one.
 */
export function nodeOfKey(key: string, line: number): MutableNode | undefined {
  const role = ROLE.exec(key)?.[0];
  if (!role) return undefined;
  let position = role.length;
  let name: string | undefined;
  QUOTED_NAME.lastIndex = position;
  const quoted = QUOTED_NAME.exec(key);
  if (quoted) {
    const literal = quoted[1] as string;
    // Without a backslash the literal is its own text (what JSON.parse or the fallback below give).
    if (!literal.includes('\\')) name = literal.slice(1, -1);
    else {
      try {
        name = JSON.parse(literal) as string;
      } catch {
        name = literal.slice(1, -1).replace(/\\(.)/g, '$1');
      }
    }
    position += quoted[0].length;
  }
  const attributes: Record<string, string> = {};
  let ref: string | undefined;
  for (;;) {
    ATTRIBUTE.lastIndex = position;
    const attribute = ATTRIBUTE.exec(key);
    if (!attribute) break;
    if (attribute[1] === 'ref') ref = attribute[2];
    else attributes[attribute[1] as string] = attribute[2] ?? 'true';
    position += attribute[0].length;
  }
  if (position < key.length && key.slice(position).trim() !== '') return undefined;
  return { role, name, attributes, ref, value: undefined, props: {}, children: [], line };
}

/** A key's role: its leading letters. */
const ROLE = /^[a-zA-Z]+/;
/** A key's name, a JSON string literal after one space, read where the role ends (sticky). */
const QUOTED_NAME = / ("(?:[^"\\]|\\.)*")/y;
/** One bracketed attribute after one space, read where the last part ended (sticky). */
const ATTRIBUTE = / \[([a-zA-Z-]+)(?:=([^\]]*))?\]/y;

/** Attributes Playwright writes after `[ref=...]`; every other one comes before it. */
const AFTER_REF = new Set(['cursor', 'box']);

/**
 * The key of `node` as Playwright writes it, before any YAML quoting:
 * `role "name" [states...] [ref=eN] [cursor=pointer]`.
 */
export function ariaKeyOf(node: Pick<MutableNode, 'role' | 'name' | 'attributes' | 'ref'>): string {
  let key = node.role;
  if (node.name) key += ` ${JSON.stringify(node.name)}`;
  const attribute = ([name, value]: [string, string]) => (value === 'true' ? ` [${name}]` : ` [${name}=${value}]`);
  const entries = Object.entries(node.attributes);
  for (const entry of entries) if (!AFTER_REF.has(entry[0])) key += attribute(entry);
  if (node.ref !== undefined) key += ` [ref=${node.ref}]`;
  for (const entry of entries) if (AFTER_REF.has(entry[0])) key += attribute(entry);
  return key;
}

/** A key YAML-quoted as Playwright does it: single quotes, `'` doubled, only when needed. */
export function yamlKey(text: string): string {
  return needsQuotes(text) ? `'${text.replace(/'/g, "''")}'` : text;
}

/** A value YAML-quoted as Playwright does it: double quotes with backslash escapes, only when needed. */
export function yamlValue(text: string): string {
  if (!needsQuotes(text)) return text;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must be escaped
  const escaped = text.replace(/[\\"\x00-\x1f\x7f-\x9f]/g, (character) => {
    switch (character) {
      case '\\':
        return '\\\\';
      case '"':
        return '\\"';
      case '\b':
        return '\\b';
      case '\f':
        return '\\f';
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      default:
        return `\\x${character.charCodeAt(0).toString(16).padStart(2, '0')}`;
    }
  });
  return `"${escaped}"`;
}

/** When a plain YAML scalar would not read back as the same string (Playwright's rules). */
export function needsQuotes(text: string): boolean {
  // Most keys and values: a letter, then only characters no rule below looks at (the rules
  // about numbers and keywords aside), and no trailing space.
  if (PLAIN_BY_CHARACTERS.test(text) && !text.endsWith(' ')) return !Number.isNaN(Number(text)) || isKeyword(text);
  if (text.length === 0) return true;
  if (/^\s|\s$/.test(text)) return true;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what YAML cannot carry plain
  if (/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]/.test(text)) return true;
  if (/^-/.test(text)) return true;
  if (/[\n:](\s|$)/.test(text)) return true;
  if (/\s#/.test(text)) return true;
  if (/[\n\r]/.test(text)) return true;
  if (/^[&*\],?!>|@"'#%]/.test(text)) return true;
  if (/[{}`]/.test(text)) return true;
  if (/^\[/.test(text)) return true;
  if (!Number.isNaN(Number(text)) || isKeyword(text)) return true;
  return /^[-+]?\.(inf|nan)$/i.test(text);
}

/** Words YAML would read as something other than a string. */
const KEYWORDS: ReadonlySet<string> = new Set(['y', 'n', 'yes', 'no', 'true', 'false', 'on', 'off', 'null', '~']);
/** The longest of {@link KEYWORDS}, in characters. */
const LONGEST_KEYWORD = 5;

/** Whether `text` is one of {@link KEYWORDS} in any letter case; longer text is never lowered to check. */
function isKeyword(text: string): boolean {
  return text.length <= LONGEST_KEYWORD && KEYWORDS.has(text.toLowerCase());
}
/** A letter, then letters, digits and punctuation that none of {@link needsQuotes}'s character rules concern. */
const PLAIN_BY_CHARACTERS = /^[A-Za-z][\p{L}\p{N} "'=./[\]()_,;!?&*%@+|>$^-]*$/u;
