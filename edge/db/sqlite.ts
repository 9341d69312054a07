import { type Client, createClient } from '@libsql/client';
import { drizzle } from 'drizzle-orm/libsql';
import { migrate } from 'drizzle-orm/libsql/migrator';
import type { Database } from '../ports.ts';
import * as schema from './schema.ts';

/**
 * The edge's database on Deno and Node: a local SQLite file through libSQL (`@libsql/client`, a
 * prebuilt native binding from the npm registry, no build step), with the same drizzle schema and
 * the same migrations from `drizzle/` as D1.
 *
 * It keeps D1's semantics where the pipeline relies on them:
 * - `batch` is atomic: libSQL runs it as one transaction and rolls it back when any statement
 *   fails (a trigger's `RAISE(ABORT)` included);
 * - batches run one at a time: one connection, and libSQL executes a batch synchronously between
 *   its BEGIN and COMMIT, so no other request's statements interleave;
 * - foreign keys are enforced (D1 always enforces them; SQLite only when asked).
 * WAL journaling lets another process (a test's read-back) read while the edge writes. One edge
 * process per file: SQLite would serialize two, but a second writer process waits on the lock.
 */
export interface SqliteDatabase {
  /** A drizzle database over the file; cheap, so the entry builds one per request. */
  drizzle(): Database;
  /** Closes the connection; later statements fail. */
  close(): void;
}

/** Where the database lives and where its migrations come from. */
export interface SqliteDatabaseOptions {
  /** Absolute path of the SQLite file; created when missing (its directory must exist). */
  path: string;
  /** Absolute path of the drizzle migrations folder (`drizzle/`, with `meta/_journal.json`). */
  migrationsFolder: string;
  /** How long a statement waits for another process's lock before failing, in ms (default 5000). */
  busyTimeoutMs?: number;
}

/**
 * Opens (or creates) the SQLite file, switches it to WAL, enforces foreign keys, and applies the
 * migrations it has not seen yet (drizzle's `__drizzle_migrations` table records them; all
 * pending ones run in one transaction, so a failed start leaves the file as it was).
 * @throws Error (libSQL's) when the file cannot be opened or a migration fails.
 */
export async function openSqliteDatabase(options: SqliteDatabaseOptions): Promise<SqliteDatabase> {
  const client = openClient(options.path, options.busyTimeoutMs ?? 5_000);
  try {
    await client.execute('PRAGMA journal_mode = WAL');
    await client.execute('PRAGMA foreign_keys = ON');
    await migrate(drizzle(client, { schema }), { migrationsFolder: options.migrationsFolder });
    // The migrator switches foreign keys off while it runs; make sure they are on afterwards.
    await client.execute('PRAGMA foreign_keys = ON');
  } catch (error) {
    client.close();
    throw error;
  }
  return {
    drizzle: () => drizzle(client, { schema }),
    close: () => client.close(),
  };
}

/** One connection (`concurrency: 1`): batches then run strictly one after another, as on D1. */
function openClient(path: string, busyTimeoutMs: number): Client {
  return createClient({ url: `file:${path}`, concurrency: 1, timeout: busyTimeoutMs });
}
