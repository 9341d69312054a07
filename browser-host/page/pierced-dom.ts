/**
 * A node of CDP `DOM.getDocument` read with `depth: -1, pierce: true`: shadow roots (open and
 * closed) and frame documents included. Only the fields the host reads.
 */
export interface PiercedDomNode {
  nodeId: number;
  nodeName?: string;
  /** Attribute names and values, alternating. */
  attributes?: string[];
  /** `open`, `closed` or `user-agent` on a shadow root. */
  shadowRootType?: string;
  children?: PiercedDomNode[];
  shadowRoots?: PiercedDomNode[];
  /** A frame element's document (same-process frames only). */
  contentDocument?: PiercedDomNode;
}

/**
 * Visits every node of a pierced DOM tree, depth first, with whether it lies inside a closed
 * shadow root (a closed root itself counts as inside). Frame documents are visited only with
 * `intoFrames`. Stops as soon as `visit` returns false. The one shadow-root walk of the host: the
 * observation's closed-root count and the sign-in evidence's hidden password field both use it.
 */
export function walkPiercedDom(
  root: PiercedDomNode,
  visit: (node: PiercedDomNode, insideClosedRoot: boolean) => boolean | undefined,
  options: { readonly intoFrames: boolean } = { intoFrames: false },
): void {
  const stack: Array<{ node: PiercedDomNode; closed: boolean }> = [{ node: root, closed: root.shadowRootType === 'closed' }];
  while (stack.length > 0) {
    const { node, closed } = stack.pop() as { node: PiercedDomNode; closed: boolean };
    if (visit(node, closed) === false) return;
    for (const child of node.children ?? []) stack.push({ node: child, closed });
    for (const shadow of node.shadowRoots ?? []) stack.push({ node: shadow, closed: closed || shadow.shadowRootType === 'closed' });
    if (options.intoFrames && node.contentDocument !== undefined) stack.push({ node: node.contentDocument, closed });
  }
}

/** The value of attribute `name` of a pierced DOM node, if it has one. */
export function attributeOf(node: PiercedDomNode, name: string): string | undefined {
  const attributes = node.attributes ?? [];
  for (let index = 0; index + 1 < attributes.length; index += 2) if (attributes[index] === name) return attributes[index + 1];
  return undefined;
}
