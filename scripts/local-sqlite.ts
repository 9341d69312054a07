import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@libsql/client';
import { openSqliteDatabase } from '../edge/db/sqlite.ts';
import { type DevVars, localPrincipalsSql } from './setup.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The SQLite file `npm run dev:node` and `npm run dev:deno` use (git-ignored), like wrangler's local D1. */
export const DEFAULT_LOCAL_SQLITE_PATH = join(root, '.data', 'edge.sqlite');

/**
 * The SQLite counterpart of `prepareLocalDatabase` (scripts/setup.mjs) for the Deno and Node
 * edges: creates the file if needed, applies the migrations from `drizzle/` exactly as the
 * entries do at start, and upserts the three local principals with their hashed tokens.
 * @param path absolute path of the SQLite file.
 */
export async function prepareLocalSqlite(vars: DevVars, path: string): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  const database = await openSqliteDatabase({ path, migrationsFolder: join(root, 'drizzle') });
  database.close();
  const client = createClient({ url: `file:${path}`, timeout: 5_000 });
  try {
    await client.executeMultiple(localPrincipalsSql(vars));
  } finally {
    client.close();
  }
}

/**
 * Runs read-only SQL statements against a SQLite file while an edge may be writing to it (WAL
 * lets both proceed), one statement at a time; resolves to each statement's rows as plain
 * objects, the shape `wrangler d1 execute --json` gives for D1.
 */
export async function querySqliteFile(path: string, statements: string[]): Promise<Record<string, unknown>[][]> {
  const client = createClient({ url: `file:${path}`, timeout: 5_000 });
  try {
    const results: Record<string, unknown>[][] = [];
    for (const statement of statements) {
      const result = await client.execute(statement);
      results.push(result.rows.map((row) => Object.fromEntries(result.columns.map((column, index) => [column, row[index]]))));
    }
    return results;
  } finally {
    client.close();
  }
}
