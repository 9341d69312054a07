import { start, load, type Harness } from './harness.ts';
import { readReach, markNamesAndReach } from '../browser-host/snapshot-marks.ts';
import { Deadline } from '../browser-host/deadline.ts';

export async function capture(h: Harness) {
  const d = Deadline.after(5000);
  const t0 = performance.now();
  const reach = await readReach(d, h.page);
  const t1 = performance.now();
  const text = await h.page.ariaSnapshot({ mode: 'ai' });
  const t2 = performance.now();
  const lines = markNamesAndReach(text.split('\n'), reach);
  const t3 = performance.now();
  d.dispose?.();
  return { reach, text, lines, ms: { reach: t1 - t0, snap: t2 - t1, mark: t3 - t2 } };
}

const cases: Record<string, string> = process.argv[2] ? { arg: process.argv[2] } : {
  basic: `<button>Behind</button><dialog id=d><button>Inside</button></dialog><script>d.showModal()</script>`,
  refInjectName: `<button>Behind</button><button>[ref=e4]</button><dialog id=d><p>x</p><button>Inside</button></dialog><script>d.showModal()</script>`,
  refInjectText: `<button>Behind</button><dialog id=d><p>[ref=e2] [ref=e3] [ref=f1e2] [ref=f1e3]</p><button>Inside</button></dialog><script>d.showModal()</script>`,
  nested: `<button>Behind</button><dialog id=a><button>In A</button><dialog id=b><button>In B</button></dialog></dialog><script>a.showModal();b.showModal()</script>`,
  nestedSiblings: `<button>Behind</button><dialog id=a><button>In A</button></dialog><dialog id=b><button>In B</button></dialog><script>a.showModal();b.showModal()</script>`,
  inertAncestor: `<button>Behind</button><div inert><dialog id=d><button>Inside</button></dialog></div><script>d.showModal()</script>`,
  shadowOpen: `<button>Behind</button><x-m></x-m><script>const r=document.querySelector('x-m').attachShadow({mode:'open'});r.innerHTML='<dialog><button>Inside</button></dialog>';r.querySelector('dialog').showModal()</script>`,
  shadowClosed: `<button>Behind</button><x-m></x-m><script>const r=document.querySelector('x-m').attachShadow({mode:'closed'});r.innerHTML='<dialog><button>Inside</button></dialog>';r.querySelector('dialog').showModal()</script>`,
  ariaModalVisible: `<button>Behind</button><div role=dialog aria-modal=true><button>Inside</button></div>`,
  ariaModalHidden: `<button>Behind</button><div role=dialog aria-modal=true hidden><button>Inside</button></div>`,
  ariaModalVisibilityHidden: `<button>Behind</button><div role=dialog aria-modal=true style="visibility:hidden"><button>Inside</button></div>`,
  ariaModalZeroSize: `<button>Behind</button><div role=dialog aria-modal=true style="position:absolute;width:0;height:0;overflow:hidden"><button>Inside</button></div>`,
  iframeInModal: `<button>Behind</button><dialog id=d><button>Inside</button><iframe srcdoc="<button>In frame</button>"></iframe></dialog><script>d.showModal()</script>`,
  modalInIframe: `<button>Top</button><iframe srcdoc="<button>Frame behind</button><dialog id=d><button>Frame inside</button></dialog><script>d.showModal()</script>"></iframe>`,
  inertSubtree: `<button>Live</button><div inert><button>Dead</button><a href=/x>Dead link</a></div>`,
  inertMany: `${'<span inert></span>'.repeat(16)}<div inert><button>Dead</button></div><button>Live</button>`,
  inertText: `<button>Live</button><div inert><p>[ref=e2]</p></div>`,
  modalDisplayNone: `<button>Behind</button><dialog id=d style="display:none"><button>Inside</button></dialog><script>d.showModal()</script>`,
  popoverOverModal: `<button>Behind</button><div popover id=p><button>In popover</button></div><dialog id=d><button>Inside</button></dialog><script>d.showModal();p.showPopover()</script>`,
  dialogAncestorSiblings: `<main><h1>T</h1><button>Sib</button><section><dialog id=d><button>Inside</button></dialog><button>Sib2</button></section></main><script>d.showModal()</script>`,
  buttonHoldsModal: `<div role=button tabindex=0 id=bb>Delete everything<dialog id=d><button>Inside</button></dialog></div><script>d.showModal()</script>`,
  ariaOwnsIntoModal: `<button id=o>Behind owned</button><dialog id=d aria-owns=o><button>Inside</button></dialog><script>d.showModal()</script>`,
  slotIntoModal: `<x-s><button>Slotted light</button></x-s><button>Behind</button><script>const r=document.querySelector('x-s').attachShadow({mode:'open'});r.innerHTML='<dialog><slot></slot></dialog>';r.querySelector('dialog').showModal()</script>`,
};

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('modal.ts')) {
  const h = await start();
  for (const [label, html] of Object.entries(cases)) {
    await load(h, html);
    await h.page.waitForTimeout(50);
    const c = await capture(h);
    console.log(`== ${label}  reachable=${c.reach.reachable ? JSON.stringify([...c.reach.reachable]) : 'undefined'} inert=${JSON.stringify([...c.reach.inert])}`);
    console.log(c.lines.map((l) => '   | ' + l).join('\n'));
  }
  await h.close();
}
