// Applies pending migrations to the configured database and says what it did.
// Usage: npm run db:migrate   (the server's configuration: DATABASE_URL, or DATA_DIR for PGlite)
import { loadConfig } from '../server/config.js';
import { createLogger } from '../server/logging.js';
import { MigrationError, openDatabase } from '../server/storage/index.js';

let config;
try {
  config = loadConfig();
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
const { databaseUrl, dataDir } = config;
const logger = createLogger(process.env.LOG_LEVEL ?? 'warn');
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
