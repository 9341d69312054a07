import { applyD1Migrations, env } from 'cloudflare:test';

// The same migrations `wrangler d1 migrations apply` uses, applied to the test's real D1.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
