import { parseAriaSnapshot, walkAria } from '../shared/aria-snapshot.ts';

/**
 * Reading refs out of an AI-mode aria snapshot as an agent would: by role and accessible name,
 * from the text the API returned. Lines look like `- textbox "What needs to be done?" [ref=e20]`
 * (or quoted whole, `- 'heading "Post #10" [ref=e4]'`); shared/aria-snapshot.ts reads them.
 */

/** One node of a snapshot: its indentation depth, role, name, attributes and ref. */
export interface SnapshotNode {
  readonly depth: number;
  readonly role: string;
  readonly name: string | undefined;
  readonly ref: string | undefined;
  readonly checked: boolean;
  readonly inert: boolean;
  readonly line: string;
}

/** Every node of a snapshot in line order (a depth-first walk is line order); text nodes and `/url:` props are skipped. */
export function snapshotNodes(snapshot: string): SnapshotNode[] {
  const lines = snapshot.split('\n');
  return [...walkAria(parseAriaSnapshot(snapshot))]
    .filter((node) => node.role !== 'text')
    .map((node) => {
      const line = lines[node.line] ?? '';
      return {
        depth: (line.length - line.trimStart().length) / 2,
        role: node.role,
        name: node.name,
        ref: node.ref,
        checked: node.attributes.checked === 'true',
        inert: node.attributes.inert === 'true',
        line,
      };
    });
}

/** The ref of the one node with this role (and name, when given); throws when not exactly one. */
export function refOf(snapshot: string, role: string, name?: string): string {
  const matches = snapshotNodes(snapshot).filter((node) => node.role === role && (name === undefined || node.name === name) && node.ref);
  if (matches.length !== 1) throw new Error(`expected one ${role}${name ? ` "${name}"` : ''} in the snapshot, found ${matches.length}`);
  return matches[0]!.ref!;
}

/** The nodes inside the first node of `role` whose subtree mentions `text`. */
export function subtreeMentioning(snapshot: string, role: string, text: string): SnapshotNode[] {
  const lines = snapshot.split('\n');
  const nodes = snapshotNodes(snapshot);
  for (const [index, node] of nodes.entries()) {
    if (node.role !== role) continue;
    const inside: SnapshotNode[] = [];
    for (const next of nodes.slice(index + 1)) {
      if (next.depth <= node.depth) break;
      inside.push(next);
    }
    const start = lines.indexOf(node.line);
    const end = inside.length ? lines.indexOf(inside[inside.length - 1]!.line) + 2 : start + 1;
    if (lines.slice(start, end).some((line) => line.includes(text))) return [node, ...inside];
  }
  return [];
}
