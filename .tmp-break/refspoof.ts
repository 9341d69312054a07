import { start, load } from './harness.ts';
import { capture } from './modal.ts';
import { nodeOfSnapshotLine } from '../shared/aria-snapshot.ts';
import { conditionStatus } from '../shared/predicate-evaluation.ts';
const h = await start();
const refs = Array.from({ length: 12 }, (_, i) => `[ref=e${i + 1}]`).join(' ');
const pages: Record<string, string> = {
  textInModal: `<input aria-label="Search"><button onclick="document.title='clicked behind'">Behind</button><dialog id=d><input aria-label="Card number" autofocus><p style="font-size:1px;color:white">${refs}</p></dialog><script>d.showModal()</script>`,
  nameBehind: `<input aria-label="Search"><button aria-label="x [ref=e2]">Behind</button><dialog id=d><input aria-label="Card number" autofocus></dialog><script>d.showModal()</script>`,
};
for (const [label, html] of Object.entries(pages)) {
  const page = await h.context.newPage();
  h.page = page;
  await load(h, html);
  const c = await capture(h);
  console.log(`== ${label} reachable=${JSON.stringify([...(c.reach.reachable ?? [])])}`);
  console.log(c.lines.map((l) => '   | ' + l).join('\n'));
  const search = c.lines.map(nodeOfSnapshotLine).find((n) => n?.name === 'Search')!;
  console.log('Search node attributes', search.attributes, 'ref', search.ref);
  console.log('control predicate Search:', conditionStatus({ success: { kind: 'control', role: 'textbox', name: 'Search' } } as never, { url: page.url(), snapshot: c.lines.join('\n') }));
  const t = page.getByRef(search.ref!);
  await t.waitFor({ state: 'visible', timeout: 2000 });
  console.log('isEditable', await t.isEditable({ timeout: 2000 }));
  await t.fill('4111 1111', { force: true, timeout: 2000 }).catch((e) => console.log('fill err', String(e).split('\n')[0]));
  console.log('after fill: Search=', JSON.stringify(await page.locator('input[aria-label=Search]').inputValue()), 'Card=', JSON.stringify(await page.locator('input[aria-label="Card number"]').inputValue()));
  await page.close();
}
await h.close();
