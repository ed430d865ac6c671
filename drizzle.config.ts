import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'mysql',
  schema: './drizzle/schema.ts',
  out: './drizzle/migrations',
});
