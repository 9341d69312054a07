import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, test as plain } from 'vitest';
import { type BrowserHost, startBrowserHost } from '../../browser-host/host.ts';
import { connectHost, type HostClient } from '../support/host-client.ts';
import { acquire, TEST_SECRET, temporaryDirectory, testHostConfig } from '../support/host-fixture.ts';

// Ordinary pages that now read as sign-in walls because a link says "Sign in with <any
// name>" (shared/sign-in-words.ts `namesSingleSignOn`, `single_sign_on_any_provider`), with a title
// or heading that merely talks about signing in. README "Sign-in walls": one word never parks a run,
// and a help article about signing in is not a wall.

const page = (title: string, body: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;

const PAGES: Record<string, { shape: string; html: string }> = {
  '/help/sign-in': {
    shape: 'a help article "Sign in to your account" that links to the article on work accounts',
    html: page(
      'Sign in to your account – Acme Help Center',
      `<main><article><h1>Sign in to your account</h1><p>Click Sign in at the top of any page and enter your email.</p>
<p>Using Acme at work? See <a href="/help/work">Sign in with your work account</a>.</p></article></main>`,
    ),
  },
  '/blog/login-redesign': {
    shape: 'a blog post "Login page redesign" linking to an earlier post',
    html: page(
      'Login page redesign – Acme blog',
      `<main><article><h1>Login page redesign</h1><p>Last year we shipped <a href="/blog/magic-links">Log in with magic links</a>; now the page itself is new.</p></article></main>`,
    ),
  },
  '/course/login-flows': {
    shape: 'a course page "Login flows in React" listing its lessons',
    html: page(
      'Login flows in React – Course',
      `<main><h1>Login flows in React</h1><ol><li><a href="/course/1">Login with Firebase</a></li><li><a href="/course/2">Sign in with NextAuth</a></li></ol></main>`,
    ),
  },
  '/account': {
    shape: 'a signed-in account page with its login history and an account switcher',
    html: page(
      'Your account – Acme',
      `<main><h1>Your account</h1><p>Hello, Jane.</p><h2>Login history</h2><ul><li>Today, Firefox on Linux</li></ul><a href="/switch">Log in with another account</a></main>`,
    ),
  },
};

interface World {
  readonly origin: string;
  readonly host: BrowserHost;
}

const test = plain
  .extend('world', { scope: 'file' }, async ({}, { onCleanup }): Promise<World> => {
    const server: Server = createServer((request, response) => {
      const found = PAGES[new URL(request.url ?? '/', 'http://x').pathname];
      response.writeHead(found ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' }).end(found?.html ?? page('Not found', '<h1>Not found</h1>'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const profiles = await temporaryDirectory('words-');
    const host = await startBrowserHost(testHostConfig(profiles.dir));
    onCleanup(async () => {
      await host.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await profiles.remove();
    });
    return { origin, host };
  })
  .extend('client', async ({ world }, { onCleanup }): Promise<HostClient> => {
    const client = await connectHost(world.host.url, TEST_SECRET);
    onCleanup(() => client.close());
    return client;
  });

describe('ordinary pages with a "Sign in with <name>" link', () => {
  test.for(Object.entries(PAGES))('%s is not a sign-in wall', async ([path], { world, client }) => {
    const lease = await acquire(client, 'words', 60_000, undefined, [world.origin]);
    try {
      const seen = await client.call('page.navigate', { lease_id: lease.lease_id, url: `${world.origin}${path}`, timeout_ms: 15_000 });
      expect(seen.title).not.toBe('Not found');
      // Before the fix: sign_in with reasons single_sign_on + sign_in_heading (weight 2): the run would be parked.
      expect(seen.sign_in?.reasons).toBeUndefined();
    } finally {
      await client.call('lease.release', { lease_id: lease.lease_id });
    }
  });
});
