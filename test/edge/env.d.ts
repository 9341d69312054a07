import type { D1Migration } from '@cloudflare/vitest-pool-workers';

declare module 'cloudflare:test' {
  interface ProvidedEnv {
    DB: D1Database;
    TEST_MIGRATIONS: D1Migration[];
    HOST_URL: string;
    HOST_SHARED_SECRET: string;
  }
}
