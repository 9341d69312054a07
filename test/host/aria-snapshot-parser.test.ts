import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_CHROMIUM_ARGS } from '../../browser-host/profiles.ts';
import { withContentNames } from '../../browser-host/snapshot/marks.ts';
import { type AriaNode, parseAriaSnapshot, renderAriaSnapshot, walkAria } from '../../shared/aria-snapshot.ts';

// The snapshot reader (shared/aria-snapshot.ts) over every line form Playwright 1.65 emits. No
// expected YAML is written here: each snapshot comes from a real page in real Chromium, and the
// reader must give Playwright's text back exactly, read any window of it as the whole does, and
// agree with Playwright's own accessible names.

/** Pages that together produce every line form: quoted keys and values, properties, text nodes, states, frames. */
const PAGES: Record<string, string> = {
  'quoted names and values': `
    <h1>Post #10</h1><h2>Time: 10:30</h2><h3>He said "hi" 🙂</h3><h4>It's 'quoted'</h4><h5>back\\slash</h5>
    <button>- leading dash</button><button>42</button><button>true</button><button>null</button><button>[bracketed]</button>
    <button>{braces}</button><button>&amp; ampersand</button><button>* star</button><button>#hash</button><button>a: b</button>
    <p>Paragraph: with colon</p><p>"quoted paragraph"</p><p>- dash paragraph</p><p>yes</p><p>12.5</p><p>#tag</p>
    <p>emoji 🎉 and ünïcödé</p><p>trailing # mark</p><p>.inf</p>`,
  'properties and text nodes': `
    <a href="/plain">Plain link</a><a href="/q?a=1&b=2#frag">Query: link</a><a href="#top">#top</a>
    <a href="data:text/plain,hello">Data link</a>
    <label>Name <input placeholder="Your name: first"></label><input placeholder="#search" aria-label="Search box">
    <input value="typed value"><textarea>line one
line two</textarea>
    <div>Loose text <b>bold</b> more text <a href="/x">inline link</a> tail</div>
    <ul><li>One</li><li>Two: three</li><li><a href="/in">In list</a> after</li></ul>`,
  states: `
    <input type="checkbox" checked aria-label="Checked box"><input type="checkbox" aria-label="Unchecked box">
    <input type="checkbox" id="mixed" aria-label="Mixed box"><script>document.getElementById('mixed').indeterminate = true</script>
    <button disabled>Disabled</button><button aria-expanded="true">Expanded</button><button aria-expanded="false">Collapsed</button>
    <button aria-pressed="true">Pressed</button><button aria-pressed="mixed">Half pressed</button>
    <div role="tablist"><div role="tab" aria-selected="true">Tab A</div><div role="tab" aria-selected="false">Tab B</div></div>
    <select aria-label="Choice"><option>First</option><option selected>Second: pick</option></select>
    <input aria-invalid="true" aria-label="Invalid field"><input aria-invalid="spelling" aria-label="Spelling field">
    <button autofocus>Focused</button><input type="radio" name="r" checked aria-label="Radio on">
    <h6>Level six</h6><div role="heading" aria-level="7">Level seven</div>
    <progress value="3" max="10" aria-label="Progress"></progress><input type="range" aria-label="Volume">
    <div role="switch" aria-checked="true" tabindex="0">Switch on</div>`,
  'structure, frames and names from content': `
    <nav aria-label="Main"><a href="/"><img alt="Home" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8"></a>
    <a href="/cart"><span><img alt="Cart" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8"></span> (2)</a></nav>
    <button><img alt="Search" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8"></button>
    <button><svg role="img" width="8" height="8"><title>Close: now</title></svg></button>
    <table aria-label="Orders"><tr><th>Order</th><th>Total</th></tr><tr><td>#1001</td><td>$5: paid</td></tr></table>
    <div role="listbox" aria-label="Sizes"><div role="option">Small</div><div role="option" aria-selected="true">Large</div></div>
    <iframe srcdoc="<button>Inside frame</button><p>Frame: text</p>" title="Embedded"></iframe>
    <main><section aria-label="Deep"><div><div><div><article><h2>Deep #1</h2><p>Deep text</p></article></div></div></div></section></main>
    <a href="/split"><img alt="Ho" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8"><img alt="me" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8"></a>
    <button><img alt="$" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8">5</button>
    <button><img alt="Keep" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8"><input aria-label="Delete all files" style="opacity:0;width:1px"></button>
    <button><img alt="Save" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8"><span aria-hidden="true">Delete all</span></button>
    <a href="/labelled" aria-labelledby="lab"><img id="lab" alt="Start" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8"><img alt="Delete everything" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8"></a>`,
};

let context: BrowserContext;
let page: Page;
let profile: string;
const snapshots = new Map<string, string>();

beforeAll(async () => {
  profile = mkdtempSync(join(tmpdir(), 'aria-parser-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: [...BASE_CHROMIUM_ARGS],
  });
  page = context.pages()[0] ?? (await context.newPage());
  for (const [name, html] of Object.entries(PAGES)) {
    // The load event: inline scripts have run and the srcdoc frame has loaded.
    await page.setContent(`<!doctype html><html lang="en"><body>${html}</body></html>`, { waitUntil: 'load' });
    snapshots.set(name, await page.ariaSnapshot({ mode: 'ai' }));
  }
});

afterAll(async () => {
  await context?.close();
  rmSync(profile, { recursive: true, force: true });
});

const identity = (node: AriaNode) => ({ role: node.role, name: node.name, attributes: node.attributes, ref: node.ref });

describe.each(Object.keys(PAGES))('the snapshot reader on a page of %s', (name) => {
  it('renders the parsed snapshot back to exactly the text Playwright printed', () => {
    const text = snapshots.get(name)!;
    expect(renderAriaSnapshot(parseAriaSnapshot(text))).toBe(text);
  });

  it('reads a node for every line that carries its own ref, at that line', () => {
    const text = snapshots.get(name)!;
    const lines = text.split('\n');
    const nodes = [...walkAria(parseAriaSnapshot(text))];
    const refLines = lines.flatMap((line, index) => (/^ *- (?:'?)[a-z]+\b.*\[ref=[a-z0-9]+\]/i.test(line) ? [index] : []));
    expect(nodes.filter((node) => node.ref !== undefined).map((node) => node.line)).toEqual(refLines);
  });

  it('reads every window of the snapshot, however it is cut, as the whole snapshot reads those lines', () => {
    const text = snapshots.get(name)!;
    const lines = text.split('\n');
    const whole = new Map([...walkAria(parseAriaSnapshot(text))].map((node) => [node.line, identity(node)]));
    for (const size of [1, 2, 3, 7, 25]) {
      for (let start = 0; start < lines.length; start++) {
        const window = lines.slice(start, start + size);
        for (const node of walkAria(parseAriaSnapshot(window.join('\n')))) {
          expect(identity(node), `window [${start}, ${start + size}) line ${node.line}`).toEqual(whole.get(start + node.line));
        }
      }
    }
  });
});

describe('names against Playwright', () => {
  it('every named control the reader finds is one Playwright finds by that role and exact name', async () => {
    for (const [name, html] of Object.entries(PAGES)) {
      await page.setContent(`<!doctype html><html lang="en"><body>${html}</body></html>`);
      const text = await page.ariaSnapshot({ mode: 'ai' });
      const named = [...walkAria(parseAriaSnapshot(text))].filter(
        (node) =>
          node.ref !== undefined &&
          !node.ref.startsWith('f') &&
          node.name !== undefined &&
          ['button', 'link', 'heading', 'checkbox', 'textbox', 'tab'].includes(node.role),
      );
      expect(named.length, name).toBeGreaterThan(0);
      for (const node of named) {
        const byRole = page.getByRole(node.role as 'button', { name: node.name, exact: true });
        expect(await page.getByRef(node.ref!).and(byRole).count(), `${name}: ${node.role} ${JSON.stringify(node.name)}`).toBe(1);
      }
    }
  });

  it('a name written in from content is the accessible name Playwright computes for that element', async () => {
    await page.setContent(`<!doctype html><html lang="en"><body>${PAGES['structure, frames and names from content']}</body></html>`);
    const text = await page.ariaSnapshot({ mode: 'ai' });
    const before = new Map([...walkAria(parseAriaSnapshot(text))].map((node) => [node.ref, node.name]));
    const after = [...walkAria(parseAriaSnapshot(withContentNames(text.split('\n')).join('\n')))];
    const written = after.filter((node) => node.ref !== undefined && before.get(node.ref) === undefined && node.name !== undefined);
    expect(written.map((node) => `${node.role} ${node.name}`)).toEqual(expect.arrayContaining(['link Home', 'button Search']));
    for (const node of written) {
      const byRole = page.getByRole(node.role as 'link', { name: node.name, exact: true });
      expect(await page.getByRef(node.ref!).and(byRole).count(), `${node.role} ${JSON.stringify(node.name)}`).toBe(1);
    }
  });
});
