/**
 * The Node entry (`npm run edge:node`, or `node --import tsx edge/node.ts [--test-scheduled]`): the same
 * app as the Worker, served by `@hono/node-server`, over a local SQLite file (migrated at start),
 * with the `ws` package's WebSocket for the browser host (Node 20 has no stable global one) and
 * croner firing the cron pass every minute, as the Worker's cron trigger does. Configured by the
 * environment (edge/self-hosted/settings.ts); prints `edge listening on http://...` when ready,
 * stops on SIGINT or SIGTERM, and exits 1 with a message on bad settings or a failed start.
 */

import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { serve, upgradeWebSocket } from '@hono/node-server';
import { serveStatic } from '@hono/node-server/serve-static';
import { Cron } from 'croner';
import WebSocket, { WebSocketServer } from 'ws';
import { startSelfHostedEdge } from './self-hosted/self-hosted-edge.ts';
import { type SelfHostedSettings, selfHostedSettingsFrom } from './self-hosted/settings.ts';

const repository = join(import.meta.dirname, '..');

let settings: SelfHostedSettings;
try {
  settings = selfHostedSettingsFrom(process.env, process.argv.slice(2));
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

try {
  const sqlitePath = resolve(settings.sqlitePath);
  mkdirSync(dirname(sqlitePath), { recursive: true });
  const edge = await startSelfHostedEdge(settings, {
    // ws's event-target API delivers text frames as strings, as the standard WebSocket does.
    WebSocket,
    staticAssets: serveStatic({ root: join(repository, 'public') }),
    sqlitePath,
    migrationsFolder: join(repository, 'drizzle'),
    upgradeWebSocket,
  });
  // `protect`: a pass still running when the next minute starts is not overlapped (the pass is
  // idempotent per minute anyway).
  const cron = new Cron('* * * * *', { timezone: 'UTC', protect: true }, async () => {
    try {
      await edge.cronPass(Date.now());
    } catch (error) {
      process.stderr.write(`edge: cron pass failed: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  });
  // The owner's live view upgrades through @hono/node-server's `upgradeWebSocket` on this server.
  const sockets = new WebSocketServer({ noServer: true, maxPayload: 256 * 1024 });
  const server = serve({ fetch: edge.fetch, hostname: settings.bind, port: settings.port, websocket: { server: sockets } }, (info) => {
    process.stdout.write(`edge listening on http://${info.address}:${info.port}\n`);
  });
  server.on('error', (error) => {
    process.stderr.write(`edge could not serve: ${error.message}\n`);
    process.exit(1);
  });
  const stop = (): void => {
    cron.stop();
    server.close();
    edge.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  process.stderr.write(`edge could not start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
