// Applies pending migrations to the configured database and says what it did.
// Usage: tsx scripts/db-migrate.ts   (env DATABASE_URL, or DATA_DIR for PGlite)
import pino from 'pino';
import { MigrationError, openDatabase } from '../server/storage/index.js';

const logger = pino({ level: process.env.LOG_LEVEL ?? 'warn' });
const databaseUrl = process.env.DATABASE_URL || undefined;
const dataDir = process.env.DATA_DIR || './.data/pglite';
const target = databaseUrl ? 'PostgreSQL' : `PGlite at ${dataDir}`;

try {
  const db = await openDatabase({ databaseUrl, dataDir, logger });
  const applied = db.appliedMigrations;
  await db.close();
  if (applied.length === 0) {
    console.log(`${target}: already up to date, nothing applied`);
  } else {
    console.log(`${target}: applied ${applied.length} migration(s):`);
    for (const name of applied) console.log(`  ${name}`);
  }
} catch (error) {
  const reason = error instanceof MigrationError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
  console.error(`${target}: migration failed: ${reason}`);
  process.exitCode = 1;
}
