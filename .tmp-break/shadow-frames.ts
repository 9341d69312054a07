import { start, load } from './harness.ts';
import { ClosedRootProbe } from '../browser-host/snapshot-marks.ts';
import { Deadline } from '../browser-host/deadline.ts';
const h = await start();
const inner = `<div id=h></div><script>h.attachShadow({mode:'closed'}).innerHTML='<button>Frame closed btn</button>'</script>`;
h.pages.set('/inner', `<!doctype html><body>${inner}</body>`);
h.pages.set('/innerdecl', `<!doctype html><body><div><template shadowrootmode="closed"><button>Decl in xsite</button></template></div></body>`);
const port = new URL(h.url('/')).port;
const cases: Record<string, string> = {
  srcdoc: `<iframe srcdoc="${inner.replace(/"/g, '&quot;')}"></iframe>`,
  sameOrigin: `<iframe src="/inner"></iframe>`,
  crossSite: `<iframe src="http://localhost:${port}/inner"></iframe>`,
  aboutBlankRealm: `<div id=host></div><script>const f=document.createElement('iframe');document.body.append(f);f.contentWindow.Element.prototype.attachShadow.call(host,{mode:'closed'}).innerHTML='<button>Via iframe realm</button>';window.__native=f.contentWindow.Element.prototype.attachShadow.toString().slice(0,40)</script>`,
  aboutBlankDocWrite: `<iframe id=f></iframe><script>const d=f.contentDocument;d.open();d.write('<div id=h></div><script>h.attachShadow({mode:"closed"}).innerHTML="<button>docwrite btn</button>"<\\/script>');d.close()</script>`,
  crossSiteDeclarative: `<iframe src="http://localhost:${port}/innerdecl"></iframe>`,
  laterDeclarative: `<button id=b onclick="document.getElementById('t').setHTMLUnsafe('<div><template shadowrootmode=closed><button>Later decl</button></template></div>')">Load widget</button><div id=t></div>`,
};
for (const [label, html] of Object.entries(cases)) {
  const page = await h.context.newPage(); h.page = page;
  await load(h, html);
  await page.waitForTimeout(300);
  const probe = new ClosedRootProbe();
  const n1 = await probe.closedRoots(Deadline.after(3000), page);
  let extra = '';
  if (label === 'laterDeclarative') {
    await page.click('#b');
    const n2 = await probe.closedRoots(Deadline.after(3000), page);
    extra = ` after click: probe=${n2} (fresh probe=${await new ClosedRootProbe().closedRoots(Deadline.after(3000), page)})`;
  }
  const snap = await page.ariaSnapshot({ mode: 'ai' });
  const nat = await page.evaluate(() => (window as any).__native).catch(() => undefined);
  console.log(`== ${label}: closedRoots=${n1}${extra}${nat ? ' native=' + nat : ''}\n${snap.split('\n').map((l) => '   | ' + l).join('\n')}`);
  await page.close();
}
await h.close();
