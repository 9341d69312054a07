import { parseAriaSnapshot, renderAriaSnapshot, walkAria, nodeOfSnapshotLine, type AriaNode } from '../shared/aria-snapshot.ts';
import { start, load } from './harness.ts';

const base = [
  '', ' ', 'plain', ' lead', 'trail ', "it's", '"dq"', 'back\\slash', '\\', '\\"', 'a: b', 'a:', ':a', 'x #y', '#x', 'x#y', '- dash', '-', '--', '---', '...', '- ',
  '[x]', '[ref=e5]', '[inert]', 'x [ref=e99]', 'x [inert]', '] y', '{a}', '}', '|', '| x', '>', '> x', '&a', '*a', '!tag', '!!str x', '%x', '@x', '`x`', 'a`b',
  'tab\there', '\ttab', 'tab\t', 'nl\nline', '\n', 'cr\rx', 'x\r\n', '\x00nul', 'a\x01b', '\x07bell', '\x0bvt', '\x0cff', '\x1b[31mansi', '\x7fdel', '\x85nel', 'a\x85b', '\x9fapc', 'a\u00a0b', '\u00a0',
  'ls\u2028x', 'ps\u2029x', '\u2028', '\ufeffbom', 'zw\u200bsp', 'soft\u00adhy', '🙂 emoji', '👨‍👩‍👧', 'עברית RTL', '\u202eRLO', 'مرحبا: x', 'null', 'Null', 'true', 'yes', 'No', 'on', 'off', '~', 'y', 'n', '42', '-1', '0x1f', '1e3', '.inf', '-.Inf', '.NaN', '0o7', '+1', '1_000',
  'text: x', '/url: y', '- text: z', 'text', '/url', 'ref=e1', '"', "'", "''", '"a" [ref=e3]', 'button "x" [ref=e1]', 'a, b', '? q', '?q', 'a ? b', '<<', '= x', "'a' b", 'a "b" c',
  'x'.repeat(950), ('"'.repeat(450)), ('\\'.repeat(600)), ('\x01'.repeat(200)), 'é'.repeat(1100), 'ab '.repeat(400) + 'end', ('a: ').repeat(320), '\ud800lone', 'x\udfff',
  '#', ' #', '&', '*', '!', '%', '@', '`', ',', '?', ']', '[', '{', '}', 'a\\nb', '\\x41', '\\u0041', '%TAG', '# comment',
];

function describe(n: AriaNode | undefined) { return n && { role: n.role, name: n.name, ref: n.ref, attributes: n.attributes, value: n.value, props: n.props }; }
const eq = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

const h = await start();
const problems: string[] = [];
let snapshots = 0;
const chunks: string[][] = [];
for (let i = 0; i < base.length; i += 12) chunks.push(base.slice(i, i + 12));
for (const chunk of chunks) {
  const html = `<div id=root></div><script>
  const S = ${JSON.stringify(chunk).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')};
  const root = document.getElementById('root');
  const el = (tag, props = {}, kids = []) => { const e = document.createElement(tag); for (const [k, v] of Object.entries(props)) { if (k === 'text') e.textContent = v; else e.setAttribute(k, v); } for (const k of kids) e.append(k); root.append(e); return e; };
  const mk = (tag, props = {}, kids = []) => { const e = document.createElement(tag); for (const [k, v] of Object.entries(props)) { if (k === 'text') e.textContent = v; else e.setAttribute(k, v); } for (const k of kids) e.append(k); return e; };
  for (const s of S) {
    el('button', { text: s });
    el('h2', { text: s });
    el('p', { text: s });
    el('a', { href: s, text: s });
    el('a', { href: s }, [mk('img', { alt: s, width: '8', height: '8', src: 'data:image/gif;base64,R0lGODlhAQABAAAAACw=' })]);
    el('input', { placeholder: s });
    el('button', { 'aria-label': s });
    el('div', {}, [s, mk('b', { text: 'bold' }), s, mk('a', { href: '/x', text: 'in' }), s]);
    const i = el('input', { 'aria-label': 'v' }); i.value = s;
    el('ul', {}, [mk('li', { text: s }), mk('li', {}, [mk('a', { href: s, title: s }), s])]);
    el('table', {}, [mk('tr', {}, [mk('th', { text: s }), mk('th', { text: 'B' })]), mk('tr', {}, [mk('td', { text: s }), mk('td', {}, [mk('button', { text: s })])])]);
    el('select', { 'aria-label': s }, [mk('option', { text: s })]);
    el('img', { alt: s, src: 'data:image/gif;base64,R0lGODlhAQABAAAAACw=', width: '8', height: '8' });
    el('div', { role: 'checkbox', 'aria-checked': 'mixed', tabindex: '0', text: s });
    el('textarea', { 'aria-label': 'ta', placeholder: s });
  }
  </script>`;
  await load(h, html);
  const text = await h.page.ariaSnapshot({ mode: 'ai' });
  snapshots++;
  const lines = text.split('\n');
  let whole: AriaNode[];
  try { whole = parseAriaSnapshot(text); } catch (e) { problems.push(`parse threw on chunk ${JSON.stringify(chunk)}: ${e}`); continue; }
  const rendered = renderAriaSnapshot(whole);
  if (rendered !== text) {
    const r = rendered.split('\n');
    let k = 0; while (k < Math.max(r.length, lines.length) && r[k] === lines[k]) k++;
    problems.push(`ROUNDTRIP chunk starting ${JSON.stringify(chunk[0])}: first diff line ${k}\n  pw : ${JSON.stringify(lines[k])}\n  ren: ${JSON.stringify(r[k])}\n  (pw lines ${lines.length}, rendered ${r.length})`);
  }
  const byLine = new Map<number, AriaNode>();
  for (const n of walkAria(whole)) byLine.set(n.line, n);
  // every item line that is not a prop must be a node
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (/^ *- \/[a-z]+:/.test(l)) continue;
    if (!byLine.has(i)) problems.push(`MISSING node for line ${i}: ${JSON.stringify(l)}`);
    const single = nodeOfSnapshotLine(l);
    const w = byLine.get(i);
    if (w && w.role !== 'text' && !eq({ role: w.role, name: w.name, ref: w.ref, attributes: w.attributes }, single)) problems.push(`nodeOfSnapshotLine mismatch line ${i}: ${JSON.stringify(l)} -> ${JSON.stringify(single)} vs ${JSON.stringify(describe(w))}`);
  }
  // windows
  const seen = new Set<string>();
  for (let s = 0; s < lines.length; s++) for (let size = 1; size <= 10 && s + size <= lines.length; size++) {
    let nodes: AriaNode[];
    try { nodes = parseAriaSnapshot(lines.slice(s, s + size).join('\n')); } catch (e) { problems.push(`window threw at ${s}+${size}: ${e}`); continue; }
    const got = new Map<number, AriaNode>();
    for (const n of walkAria(nodes)) got.set(n.line + s, n);
    for (let i = s; i < s + size; i++) {
      const w = byLine.get(i);
      const g = got.get(i);
      if (!w && !g) continue;
      const a = w && { role: w.role, name: w.name, ref: w.ref, attributes: w.attributes, value: w.value };
      const b = g && { role: g.role, name: g.name, ref: g.ref, attributes: g.attributes, value: g.value };
      if (!eq(a, b)) { const key = `${lines[i]}`; if (!seen.has(key)) { seen.add(key); problems.push(`WINDOW ${s}+${size} line ${i} ${JSON.stringify(lines[i]).slice(0, 200)}: whole=${JSON.stringify(a)?.slice(0, 200)} window=${JSON.stringify(b)?.slice(0, 200)}`); } }
    }
  }
  // names vs Playwright (sample)
  for (const n of walkAria(whole)) {
    if (!n.ref || !n.name || ['text', 'generic', 'iframe'].includes(n.role)) continue;
    const c = await h.page.getByRef(n.ref).and(h.page.getByRole(n.role as never, { name: n.name, exact: true })).count().catch((e) => -1);
    if (c !== 1) problems.push(`NAME ${n.ref} ${n.role} ${JSON.stringify(n.name).slice(0, 120)}: getByRole&getByRef count=${c}`);
  }
  // restore last snapshot as the one for refs: not needed
}
console.log('snapshots', snapshots, 'problems', problems.length);
for (const p of problems.slice(0, 80)) console.log(p);
await h.close();
