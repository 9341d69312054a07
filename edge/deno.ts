/**
 * The Deno entry (`npm run edge:deno`; Deno from the npm package `deno`): the same app as the
 * Worker, served by `Deno.serve`, over a local SQLite file (migrated at start), with Deno's
 * global WebSocket for the browser host and `Deno.cron` firing the cron pass every minute, as the
 * Worker's cron trigger does. npm packages resolve from `node_modules` (no download). Configured
 * by the environment (edge/self-hosted/settings.ts); prints `edge listening on http://...` when
 * ready, stops on SIGINT or SIGTERM, and exits 1 with a message on bad settings or a failed start.
 *
 * Permissions it needs: net (serve, the host), read and write (the repository, the database
 * file), env, ffi (libSQL's native binding), sys (the binding's platform check), and
 * `--unstable-cron`.
 */

import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { serveStatic, upgradeWebSocket } from 'hono/deno';
import { startSelfHostedEdge } from './self-hosted/self-hosted-edge.ts';
import { type SelfHostedSettings, selfHostedSettingsFrom } from './self-hosted/settings.ts';

/** The part of Deno's runtime API this entry uses (tsc checks the project without Deno's types). */
interface DenoRuntime {
  readonly args: string[];
  readonly env: { toObject(): Record<string, string> };
  serve(
    options: { hostname: string; port: number; onListen(address: { hostname: string; port: number }): void },
    handler: (request: Request) => Response | Promise<Response>,
  ): { shutdown(): Promise<void> };
  cron(name: string, schedule: string, handler: () => Promise<void>): Promise<void>;
  addSignalListener(signal: 'SIGINT' | 'SIGTERM', handler: () => void): void;
  exit(code: number): never;
}
declare const Deno: DenoRuntime;

const repository = join(import.meta.dirname, '..');
const say = (line: string) => console.log(line);
const complain = (line: string) => console.error(line);

let settings: SelfHostedSettings;
try {
  settings = selfHostedSettingsFrom(Deno.env.toObject(), Deno.args);
} catch (error) {
  complain(error instanceof Error ? error.message : String(error));
  Deno.exit(1);
}

try {
  const sqlitePath = resolve(settings.sqlitePath);
  mkdirSync(dirname(sqlitePath), { recursive: true });
  const edge = await startSelfHostedEdge(settings, {
    WebSocket,
    staticAssets: serveStatic({ root: join(repository, 'public') }),
    sqlitePath,
    migrationsFolder: join(repository, 'drizzle'),
    upgradeWebSocket,
  });
  // Deno.cron does not overlap runs of one job; the pass is idempotent per minute anyway.
  void Deno.cron('fire due schedules', '* * * * *', async () => {
    try {
      await edge.cronPass(Date.now());
    } catch (error) {
      complain(`edge: cron pass failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  });
  const server = Deno.serve(
    { hostname: settings.bind, port: settings.port, onListen: ({ hostname, port }) => say(`edge listening on http://${hostname}:${port}`) },
    edge.fetch,
  );
  const stop = (): void => {
    void server.shutdown().finally(() => {
      edge.close();
      Deno.exit(0);
    });
  };
  Deno.addSignalListener('SIGINT', stop);
  Deno.addSignalListener('SIGTERM', stop);
} catch (error) {
  complain(`edge could not start: ${error instanceof Error ? error.message : String(error)}`);
  Deno.exit(1);
}
