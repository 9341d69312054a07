import http from 'node:http';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CLOSED_SHADOW_ROOTS_SCRIPT } from '../browser-host/snapshot-marks.ts';

export interface Harness { browser: Browser; context: BrowserContext; page: Page; url: (path: string) => string; pages: Map<string, string>; close: () => Promise<void> }

export async function start(opts: { initScript?: boolean } = {}): Promise<Harness> {
  const pages = new Map<string, string>();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const body = pages.get(path);
    if (body === undefined) { res.writeHead(404); res.end('nf'); return; }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
  const context = await browser.newContext();
  if (opts.initScript !== false) await context.addInitScript(CLOSED_SHADOW_ROOTS_SCRIPT);
  const page = await context.newPage();
  return {
    browser, context, page, pages,
    url: (p) => `http://127.0.0.1:${port}${p}`,
    close: async () => { await browser.close(); server.close(); },
  };
}

export async function load(h: Harness, html: string, name = `/p${Math.random().toString(36).slice(2)}`): Promise<void> {
  h.pages.set(name, `<!doctype html><html><head><meta charset="utf-8"></head><body>${html}</body></html>`);
  await h.page.goto(h.url(name));
}
