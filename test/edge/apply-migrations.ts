import { applyD1Migrations, env } from 'cloudflare:test';

// Every test file starts from the same empty, migrated D1. The edge project runs its files in
// shared runtimes (`isolate: false` in vitest.config.ts: a fresh runtime per file cost about 9 s
// of each file's set-up, most of the project's time), so a file's D1 may hold the rows an
// earlier file wrote: the migrations `wrangler d1 migrations apply` uses are applied (once per
// database; applied ones are skipped), then every table's rows are deleted in one batch, with the
// foreign keys checked at its end. SQLite's, D1's and the migrations' own tables are left alone.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
const { results } = await env.DB.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all<{ name: string }>();
const tables = results.map(({ name }) => name).filter((name) => !/^(sqlite_|_cf_)/.test(name) && name !== 'd1_migrations');
await env.DB.batch([env.DB.prepare('PRAGMA defer_foreign_keys = on'), ...tables.map((name) => env.DB.prepare(`DELETE FROM "${name}"`))]);
