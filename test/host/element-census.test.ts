import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Deadline } from '../../browser-host/deadline.ts';
import { BASE_CHROMIUM_ARGS } from '../../browser-host/profiles.ts';

import { IDENTIFIER_FIELDS, PASSWORD_FIELDS, REACH_CANDIDATES, readElementCensus } from '../../browser-host/snapshot/element-census.ts';
import { CLOSED_SHADOW_ROOTS_SCRIPT } from '../../browser-host/snapshot/marks.ts';

// The census a capture takes before its snapshot (browser-host/snapshot/element-census.ts) stands
// in for three Playwright locator counts: on every page it must count exactly what those counts
// find (same selectors, same trees: open shadow roots and the closed ones the host opens), so a
// zero may skip them. Real Chromium, the host's own init script.

const PAGES: Record<string, string> = {
  empty: '<h1>Nothing to sign in to</h1><button>Go</button>',
  fields: `
    <form><input type="email" name="who"><input type="password" style="display:none"><input name="LOGIN"></form>
    <div id="open"></div><div id="closed"></div>
    <iframe srcdoc="<input type=password><input type=email>"></iframe>
    <script>
      document.getElementById('open').attachShadow({ mode: 'open' }).innerHTML = '<input type="password"><input autocomplete="username webauthn">';
      const closed = document.getElementById('closed').attachShadow({ mode: 'closed' });
      closed.innerHTML = '<div><input type="password"></div>';
      const nested = closed.firstElementChild.attachShadow({ mode: 'open' });
      nested.innerHTML = '<input id="Email"><div inert><button>Hidden</button></div>';
    </script>`,
  shadowing: `
    <form id="f"><input name="hasAttribute"><input name="localName"><input name="shadowRoot" type="password"><input name="email"></form>
    <form inert><input name="querySelectorAll"></form>`,
  reach: `
    <div inert><a href="#">Out of reach</a></div>
    <dialog id="d"><p>Modal</p></dialog><div role="dialog" aria-modal="true">Sheet</div>
    <script>document.getElementById('d').showModal();</script>`,
};

let context: BrowserContext;
let page: Page;
let profile: string;

beforeAll(async () => {
  profile = mkdtempSync(join(tmpdir(), 'element-census-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: [...BASE_CHROMIUM_ARGS],
  });
  await context.addInitScript(CLOSED_SHADOW_ROOTS_SCRIPT);
  page = context.pages()[0] ?? (await context.newPage());
});

afterAll(async () => {
  await context?.close();
  rmSync(profile, { recursive: true, force: true });
});

async function census(name: string) {
  // A new document each time, so the host's init script runs in it before the page's own.
  await page.goto('about:blank');
  await page.setContent(
    `<!doctype html><html lang="en"><head><title>${name[0]?.toUpperCase()}${name.slice(1)}</title></head><body>${PAGES[name]}</body></html>`,
    { waitUntil: 'load' },
  );
  const deadline = Deadline.after(5_000);
  try {
    return await readElementCensus(deadline, page);
  } finally {
    deadline.dispose();
  }
}

describe('the element census', () => {
  it.each(Object.keys(PAGES))('counts on the %s page exactly what the locator counts it stands for find', async (name) => {
    const counted = await census(name);
    expect(counted).toEqual({
      title: expect.any(String),
      reach: await page.locator(REACH_CANDIDATES).count(),
      passwordFields: await page.locator(PASSWORD_FIELDS).count(),
      identifierFields: await page.locator(IDENTIFIER_FIELDS).count(),
    });
  });

  it('reaches into open and host-opened closed shadow roots, counts hidden fields, and leaves iframes to their own reads', async () => {
    expect(await census('fields')).toMatchObject({ reach: 1, passwordFields: 3, identifierFields: 4 });
    expect(await census('reach')).toMatchObject({ reach: 3, passwordFields: 0, identifierFields: 0 });
    // A form's named fields shadow its own properties; the census reads through them.
    expect(await census('shadowing')).toMatchObject({ reach: 1, passwordFields: 1, identifierFields: 1 });
    expect(await census('empty')).toEqual({ reach: 0, passwordFields: 0, identifierFields: 0, title: 'Empty' });
  });

  it('answers nothing, rather than a wrong zero, when the page cannot be read in time', async () => {
    await page.setContent('<!doctype html><html lang="en"><body><p>Busy</p></body></html>');
    const expired = Deadline.after(0);
    try {
      expect(await readElementCensus(expired, page)).toBeUndefined();
    } finally {
      expired.dispose();
    }
  });
});
