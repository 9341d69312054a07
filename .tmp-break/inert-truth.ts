import { start, load } from './harness.ts';
const h = await start();
const cases: Record<string, [string, string[]]> = {
  nested: [`<button id=bh>Behind</button><dialog id=a><button id=ia>In A</button><dialog id=b><button id=ib>In B</button></dialog></dialog><script>a.showModal();b.showModal()</script>`, ['bh', 'ia', 'ib']],
  nestedSiblings: [`<dialog id=a><button id=ia>In A</button></dialog><dialog id=b><button id=ib>In B</button></dialog><script>a.showModal();b.showModal()</script>`, ['ia', 'ib']],
  popover: [`<div popover id=p><button id=ip>In popover</button></div><dialog id=d><button id=id>Inside</button></dialog><script>d.showModal();p.showPopover()</script>`, ['ip', 'id']],
  ariaOwns: [`<button id=o>Behind owned</button><dialog id=d aria-owns=o><button id=id>Inside</button></dialog><script>d.showModal()</script>`, ['o', 'id']],
  ancestor: [`<div role=button tabindex=0 id=bb>Delete everything<dialog id=d><button id=id>Inside</button></dialog></div><script>d.showModal()</script>`, ['bb', 'id']],
};
for (const [label, [html, ids]] of Object.entries(cases)) {
  await load(h, html);
  const res = await h.page.evaluate((ids) => ids.map((id) => { const e = document.getElementById(id)!; e.focus(); const r = document.elementFromPoint(e.getBoundingClientRect().x + 2, e.getBoundingClientRect().y + 2); return `${id}: focusable=${document.activeElement === e} hit=${r?.id || r?.tagName}`; }), ids);
  console.log(label, res.join(' | '));
}
await h.close();
