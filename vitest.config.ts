import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';

/**
 * Four projects, which `npm test` (scripts/test.mjs) runs in two lanes:
 * - edge: the Worker inside workerd against a real, migrated D1 (Cloudflare's vitest integration),
 *   each file from empty tables;
 * - e2e-no-browser: the end-to-end parts that start no browser (the self-hosted edge's SQLite
 *   and file stores, wrangler's local D1, the memory evaluation command, the TCP relay, the
 *   model adapter against a stand-in), `test/e2e/no-browser/`;
 * - host: the browser host in Node driving real Chromium;
 * - e2e: real processes (`wrangler dev` and the host) driven over HTTP; `npm test` runs each file
 *   on its own (at most two at once, from a queue both lanes take from when their own steps are
 *   done); `vitest run --project e2e` runs them as many at once as vitest's workers.
 */
export default defineConfig(async () => {
  const migrations = await readD1Migrations('drizzle');
  return {
    test: {
      projects: [
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: './wrangler.toml' },
              miniflare: {
                bindings: {
                  TEST_MIGRATIONS: migrations,
                  HOST_SHARED_SECRET: 'test-shared-secret-of-at-least-32-bytes!!',
                  HOST_URL: 'ws://127.0.0.1:9',
                },
              },
            }),
          ],
          test: {
            name: 'edge',
            include: ['test/edge/**/*.test.ts'],
            // Generous: other suites may load the 2-core machine; nothing here asserts timing.
            testTimeout: 30_000,
            setupFiles: ['test/edge/apply-migrations.ts'],
            // One runtime runs many files: a fresh one per file cost about 9 s of set-up each
            // (548 s of the project's 872 s in a CI run). Each file still starts from an empty,
            // migrated D1 (test/edge/apply-migrations.ts empties every table before it).
            isolate: false,
          },
        },
        {
          test: {
            name: 'host',
            include: ['test/host/**/*.test.ts'],
            environment: 'node',
            testTimeout: 60_000,
            hookTimeout: 60_000,
            fileParallelism: false,
          },
        },
        {
          test: {
            name: 'e2e-no-browser',
            include: ['test/e2e/no-browser/**/*.test.ts'],
            environment: 'node',
            testTimeout: 240_000,
            hookTimeout: 240_000,
            fileParallelism: false,
          },
        },
        {
          test: {
            name: 'e2e',
            include: ['test/e2e/**/*.test.ts'],
            exclude: ['test/e2e/no-browser/**'],
            environment: 'node',
            testTimeout: 240_000,
            hookTimeout: 240_000,
            fileParallelism: true,
          },
        },
      ],
    },
  };
});
