import type { D1Migration } from '@cloudflare/vitest-plugin';

// The bindings the edge tests see inside workerd (wrangler.toml plus vitest.config.ts bindings).
declare global {
  namespace Cloudflare {
    interface Env {
      DB: D1Database;
      ARTIFACTS: R2Bucket;
      TEST_MIGRATIONS: D1Migration[];
      HOST_URL: string;
      HOST_SHARED_SECRET: string;
    }
  }
}
