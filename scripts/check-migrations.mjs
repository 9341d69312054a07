#!/usr/bin/env node
// Part of `npm test` (scripts/test.mjs): the migrations in drizzle/ describe the schema in
// edge/db/schema.ts exactly. Runs `drizzle-kit generate` against a copy of drizzle/ (under .tmp/,
// so the real folder is never touched) and fails when it writes anything: a schema change
// without its migration, which `wrangler d1 migrations apply` and the SQLite edges would never
// run. Also fails when drizzle-kit itself errs (it exits 0 on some errors, so its output is read).
//
// `node scripts/check-migrations.mjs [folder]` checks `folder` (default drizzle/) instead.
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const migrations = process.argv[2] ?? join(root, 'drizzle');
const copy = join(root, '.tmp', 'migrations-check');

/** Every file under `folder` with its text, by path relative to it. */
function filesOf(folder) {
  const files = new Map();
  for (const entry of readdirSync(folder, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(relative(folder, path), readFileSync(path, 'utf8'));
  }
  return files;
}

rmSync(copy, { recursive: true, force: true });
cpSync(migrations, copy, { recursive: true });
const before = filesOf(copy);
// drizzle-kit takes --out relative to the working directory (it prefixes './').
const result = spawnSync(
  join(root, 'node_modules', '.bin', 'drizzle-kit'),
  ['generate', '--dialect=sqlite', '--schema=./edge/db/schema.ts', `--out=${relative(root, copy)}`],
  { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', timeout: 120_000 },
);
const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
const after = filesOf(copy);
const changed = [...after.keys()].filter((path) => before.get(path) !== after.get(path));
rmSync(copy, { recursive: true, force: true });

if (changed.length > 0) {
  console.error(
    `migrations: edge/db/schema.ts has changes no migration in ${relative(root, migrations) || '.'} covers; run \`npm run db:generate\` and commit what it writes. It would write: ${changed.join(', ')}`,
  );
  process.exit(1);
}
if (result.status !== 0 || /error/i.test(output) || !/No schema changes/.test(output)) {
  console.error(`migrations: drizzle-kit generate did not confirm the schema (exit ${result.status ?? result.signal}):\n${output.trim().slice(-2_000)}`);
  process.exit(1);
}
console.log('migrations: drizzle/ matches edge/db/schema.ts');
