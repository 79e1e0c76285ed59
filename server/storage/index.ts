// Public surface of the storage layer, for scripts and tests.
export { openDatabase, DEFAULT_MIGRATIONS_DIR, MEMORY_DATA_DIR } from './database.js';
export type { Database, OpenDatabaseOptions } from './database.js';
export { detectCapabilities, FEATURES_NEEDING_VECTOR } from './capabilities.js';
export type { DatabaseCapabilities } from './capabilities.js';
export { applyMigrations, readMigrations, checksumOf, MigrationError, PRISMA_MIGRATE_LOCK_KEY } from './migrate.js';
export type { ApplyMigrationsOptions, LocalMigration, MigrationErrorCode } from './migrate.js';
export { pgClientExecutor, pgliteExecutor } from './sql-executor.js';
export type { SqlExecutor } from './sql-executor.js';
export { Prisma, PrismaClient } from '../../generated/prisma/client.js';
