import { defineConfig } from 'drizzle-kit';

/** drizzle-kit generates flat SQL migrations into drizzle/ for `wrangler d1 migrations apply`. */
export default defineConfig({
  dialect: 'sqlite',
  schema: './edge/db/schema.ts',
  out: './drizzle',
});
