// Prisma 7 reads the datasource URL from here, not from schema.prisma.
// `prisma generate` needs no database, so a placeholder URL keeps it working
// when DATABASE_URL is unset (local PGlite mode has no URL at all).
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: {
    url: process.env.DATABASE_URL ?? 'postgresql://localhost:5432/unused',
  },
});
