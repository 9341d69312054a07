import { parseDocument } from 'yaml';
import { parseAriaSnapshot, renderAriaSnapshot } from '../shared/aria-snapshot.ts';
const name = '"'.repeat(890);
const t = `- generic [ref=e1]:\n  - button ${JSON.stringify(name)} [ref=e3]: Other\n  - link ${JSON.stringify(name)} [ref=e4]:\n    - /url: /x\n  - button "ok" [ref=e5]`;
const d = parseDocument(t, { schema: 'failsafe', strict: false, uniqueKeys: false, prettyErrors: false });
console.log(d.errors.map(e => e.message.slice(0, 100)));
const n = parseAriaSnapshot(t);
console.log(renderAriaSnapshot(n) === t, JSON.stringify(n).slice(0, 300));
