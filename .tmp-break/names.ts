import { start, load } from './harness.ts';
import { withContentNames } from '../browser-host/snapshot-marks.ts';
import { nodeOfSnapshotLine } from '../shared/aria-snapshot.ts';
const IMG = 'src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8"';
const cases: Record<string, string> = {
  inlineImgs: `<a href="/h"><img alt="Ho" ${IMG}><img alt="me" ${IMG}></a>`,
  imgPlusText: `<button><img alt="$" ${IMG}>5</button>`,
  imgPlusSpanText: `<a href="/c"><img alt="Cart" ${IMG}><span>(2)</span></a>`,
  longLabel: `<a href="/delete" aria-label="${'Delete my account permanently. '.repeat(31)}">Home</a>`,
  longLabelImg: `<a href="/delete" aria-label="${'D'.repeat(901)}"><img alt="Home" ${IMG}></a>`,
  labelledbyInside: `<a href="/x" aria-labelledby="l"><img id="l" alt="Home" ${IMG}><img alt="Delete everything" ${IMG}></a>`,
  ariaHiddenChild: `<button><img alt="Keep" ${IMG}><span aria-hidden="true">Delete all</span></button>`,
  ariaHiddenImg: `<button><img alt="Keep" ${IMG}><img aria-hidden="true" alt="Delete all" ${IMG}></button>`,
  cssBefore: `<style>.x::before{content:"Pay "}</style><button class=x><img alt="now" ${IMG}></button>`,
  cssHiddenText: `<button><img alt="Cancel" ${IMG}><span style="position:absolute;left:-9999px">Confirm</span></button>`,
  opacity0: `<button><img alt="Cancel" ${IMG}><span style="opacity:0">Confirm</span></button>`,
  fontSize0: `<button><img alt="Cancel" ${IMG}><span style="font-size:0">Confirm</span></button>`,
  nestedButtonLink: `<a href="/x"><button>Inner</button><img alt="Outer" ${IMG}></a>`,
  titleAttr: `<a href="/x" title="Settings"><img ${IMG}></a>`,
  roleImgLabel: `<button><span role="img" aria-label="Close"></span></button>`,
  svgTitle: `<button><svg role="img" width=8 height=8><title>Close</title></svg></button>`,
  checkboxLabel: `<label><input type=checkbox><img alt="Remember me" ${IMG}></label>`,
  headingImg: `<h2><img alt="Logo" ${IMG}> Company</h2>`,
  tab: `<div role=tablist><div role=tab tabindex=0><img alt="Inbox" ${IMG}><span>3</span></div></div>`,
  rowCells: `<table><tr><td><a href="/a"><img alt="A" ${IMG}></a></td><td>Bob</td></tr></table>`,
  option: `<div role=listbox aria-label=L><div role=option tabindex=0><img alt="Red" ${IMG}></div></div>`,
  textboxInside: `<button><img alt="Qty" ${IMG}><input value="5" aria-label="n"></button>`,
  selectInside: `<a href="/x"><img alt="Size" ${IMG}><select aria-label="s"><option>Large</option></select></a>`,
  linkInLink: `<div role=link tabindex=0><img alt="Go" ${IMG}><a href="/evil">Delete</a></div>`,
  menuitem: `<div role=menu><div role=menuitem tabindex=0><img alt="Copy" ${IMG}> <kbd>Ctrl+C</kbd></div></div>`,
  displayNoneText: `<button><img alt="Ok" ${IMG}><span style="display:none">Hidden</span></button>`,
  ariaOwnsOutside: `<button aria-owns="o"><img alt="Save" ${IMG}></button><span id="o">Delete</span>`,
  imgEmptyAlt: `<a href="/x"><img alt="" ${IMG}>Text</a>`,
  generic: `<a href="/x"><div><img alt="A" ${IMG}></div><div>B</div></a>`,
  brSep: `<a href="/x"><img alt="A" ${IMG}><br>B</a>`,
  placeholderOnly: `<button><img alt="Find" ${IMG}><input placeholder="query"></button>`,
  shadowSlot: `<x-b><img alt="Slot" ${IMG}></x-b><script>customElements.define('x-b',class extends HTMLElement{constructor(){super();this.attachShadow({mode:'open'}).innerHTML='<button><slot></slot><img alt="Shadow" ${IMG.replace(/"/g, "&quot;")}></button>'}})</script>`,
};
const h = await start();
for (const [label, html] of Object.entries(cases)) {
  await load(h, html);
  const text = await h.page.ariaSnapshot({ mode: 'ai' });
  const lines = text.split('\n');
  const out = withContentNames(lines);
  const changed = out.map((l, i) => [lines[i]!, l] as const).filter(([a, b]) => a !== b);
  const results: string[] = [];
  for (const [, l] of changed) {
    const n = nodeOfSnapshotLine(l)!;
    const c = await h.page.getByRef(n.ref!).and(h.page.getByRole(n.role as never, { name: n.name!, exact: true })).count();
    let real = '';
    try { real = (await h.page.getByRef(n.ref!).ariaSnapshot()).split('\n')[0]!; } catch (e) { real = String(e).slice(0, 80); }
    results.push(`   ${c === 1 ? 'OK ' : 'BAD'} written ${n.role} ${JSON.stringify(n.name).slice(0, 100)}  | playwright default-mode: ${real.slice(0, 140)}`);
  }
  console.log(`== ${label}\n${text.split('\n').map(l => '   | ' + l.slice(0, 160)).join('\n')}\n${results.join('\n') || '   (no names written)'}`);
}
await h.close();
