import type { MiddlewareHandler } from 'hono';
import type { UpgradeWebSocket } from 'hono/ws';
import { createApp, DOCS_ASSETS_PATH } from '../app.ts';
import { CONSOLE_ASSETS_PATH } from '../console/pages.ts';
import { cronPass } from '../cron-pass.ts';
import { openSqliteDatabase } from '../db/sqlite.ts';
import { standardWebSocketConnector, type WebSocketConstructor } from '../host/standard-websocket-connector.ts';
import { requirePrincipal } from '../http/require-principal.ts';
import { backgroundRunner, type Ports, systemClock } from '../ports.ts';
import { fileArtifactStore } from './file-artifact-store.ts';
import type { SelfHostedSettings } from './settings.ts';

/** What a runtime (Deno, Node) supplies that Workers would otherwise provide. */
export interface RuntimeParts {
  /** The runtime's standard WebSocket, for the browser host connection. */
  readonly WebSocket: WebSocketConstructor;
  /**
   * Serves `public/`, the directory Workers serves as static assets (wrangler.toml `[assets]`):
   * the API reference's script and style sheet under {@link DOCS_ASSETS_PATH} and the owner
   * console's under {@link CONSOLE_ASSETS_PATH}.
   */
  readonly staticAssets: MiddlewareHandler;
  /** Absolute path of the SQLite file. */
  readonly sqlitePath: string;
  /** Absolute path of the drizzle migrations folder (`drizzle/`). */
  readonly migrationsFolder: string;
  /** Hono's WebSocket upgrade of the runtime (`hono/deno`, `@hono/node-server`), for the owner's live view. */
  readonly upgradeWebSocket: UpgradeWebSocket;
}

/** The edge outside Workers: the same app over a migrated SQLite file, and its cron pass. */
export interface SelfHostedEdge {
  /** The HTTP handler to serve (`Deno.serve`, `@hono/node-server`). */
  readonly fetch: (request: Request) => Response | Promise<Response>;
  /**
   * The cron pass, the same function the Worker's `scheduled` handler calls: queues the runs of
   * schedules due in the minute of `scheduledTime` (epoch ms). Resolves to how many it queued.
   */
  cronPass(scheduledTime: number): Promise<number>;
  /** Closes the database. */
  close(): void;
}

/**
 * Opens the database (applying pending migrations) and builds the app with per-request ports:
 * a drizzle database over the file, a standard-WebSocket host connector, screenshots as files
 * under `settings.artifactsDir`, the system clock.
 * @throws Error when the database cannot be opened or migrated.
 */
export async function startSelfHostedEdge(settings: SelfHostedSettings, parts: RuntimeParts): Promise<SelfHostedEdge> {
  const database = await openSqliteDatabase({ path: parts.sqlitePath, migrationsFolder: parts.migrationsFolder });
  const artifacts = fileArtifactStore(settings.artifactsDir);
  const portsOf = (requestId: string): Ports => ({
    db: database.drizzle(),
    dial: (hostUrl) => standardWebSocketConnector(hostUrl, settings.hostSharedSecret, parts.WebSocket),
    artifacts,
    upgradeWebSocket: parts.upgradeWebSocket,
    clock: systemClock,
    background: backgroundRunner(requestId),
    requestId,
    hostSecret: settings.hostSharedSecret,
    snapshotSecret: settings.snapshotSecret,
    config: settings.edge,
    anticipator: settings.anticipator,
  });
  const cronPassAt = async (scheduledTime: number) => (await cronPass(portsOf(`cron_${crypto.randomUUID()}`), scheduledTime)).queued;

  const app = createApp((c) => portsOf(c.var.requestId));
  // Where Workers answers from its static assets before the Worker runs; a miss falls through
  // to the app's typed 404.
  app.use(`${DOCS_ASSETS_PATH}/*`, parts.staticAssets);
  app.use(`${CONSOLE_ASSETS_PATH}/*`, parts.staticAssets);
  if (settings.testScheduled) {
    // Only the operator may run the cron pass on demand (on Workers only the trigger itself runs it).
    app.get('/__scheduled', requirePrincipal('operator'), async (c) => c.text(`Ran scheduled event: ${await cronPassAt(Date.now())} run(s) queued`));
  }
  return { fetch: app.fetch, cronPass: cronPassAt, close: () => database.close() };
}
