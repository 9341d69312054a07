import { Hono } from 'hono';
import { ownerScreenshot } from '../artifacts/screenshots.ts';
import { DomainError } from '../domain-error.ts';
import type { ConsoleEnv } from './session-guard.ts';

/** The owner's screenshots as the console shows them. */
export const screenshotRoutes = new Hono<ConsoleEnv>()
  // A screenshot of the owner's (issue 15); another owner's, or one whose retention ended, is 404.
  .get('/console/screenshots/:id', async (c) => {
    const found = await ownerScreenshot(c.var.ports, c.var.session.ownerId, c.req.param('id'));
    if (found === undefined) throw new DomainError('not_found', 'no such picture (it may have been removed by retention)');
    return c.body(found.bytes as Uint8Array<ArrayBuffer>, 200, {
      'Content-Type': 'image/jpeg',
      // Not kept in the browser's cache: gone with sign-out and with retention.
      'Cache-Control': 'private, no-store',
      'X-Content-Type-Options': 'nosniff',
    });
  });
