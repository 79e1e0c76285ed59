// Applies prisma/migrations/<name>/migration.sql in name order and records
// them in `_prisma_migrations` exactly as Prisma Migrate does, so that
// `prisma migrate deploy/status` agree with us on a machine that has the
// schema engine (this one cannot download it).
import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { SqlExecutor } from './sql-executor.js';

/** The advisory lock key Prisma Migrate takes: we exclude it and each other. */
export const PRISMA_MIGRATE_LOCK_KEY = 72707369;

export type MigrationErrorCode =
  | 'INVALID_MIGRATIONS_DIR'
  | 'LOCK_TIMEOUT'
  | 'CHECKSUM_MISMATCH'
  | 'UNRESOLVED_FAILED_MIGRATION'
  | 'MIGRATION_FAILED';

export class MigrationError extends Error {
  constructor(
    readonly code: MigrationErrorCode,
    message: string,
    readonly migrationName?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'MigrationError';
  }
}

export interface LocalMigration {
  name: string;
  sql: string;
  /** sha256 hex of the migration.sql bytes, as Prisma computes it */
  checksum: string;
}

export interface ApplyMigrationsOptions {
  /** How long to wait for another instance holding the lock (default 10 min: an index build can be slow). */
  lockTimeoutMs?: number;
  lockPollMs?: number;
}

// Prisma's own DDL for its bookkeeping table (PostgreSQL flavour).
const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                  VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"            VARCHAR(64) NOT NULL,
    "finished_at"         TIMESTAMPTZ,
    "migration_name"      VARCHAR(255) NOT NULL,
    "logs"                TEXT,
    "rolled_back_at"      TIMESTAMPTZ,
    "started_at"          TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

interface MigrationRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | string | null;
  rolled_back_at: Date | string | null;
}

export function checksumOf(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Reads `<dir>/<name>/migration.sql` folders, sorted by name (timestamp prefix). */
export async function readMigrations(migrationsDir: string): Promise<LocalMigration[]> {
  let entries;
  try {
    entries = await readdir(migrationsDir, { withFileTypes: true });
  } catch (error) {
    throw new MigrationError('INVALID_MIGRATIONS_DIR', `cannot read migrations directory ${migrationsDir}`, undefined, { cause: error });
  }
  await checkLockFile(migrationsDir, entries.map((e) => e.name));
  const names = entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
  const migrations: LocalMigration[] = [];
  for (const name of names) {
    const file = path.join(migrationsDir, name, 'migration.sql');
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (error) {
      throw new MigrationError('INVALID_MIGRATIONS_DIR', `migration folder ${name} has no readable migration.sql`, name, { cause: error });
    }
    migrations.push({ name, sql: bytes.toString('utf8'), checksum: checksumOf(bytes) });
  }
  return migrations;
}

// Prisma refuses to apply migrations written for another provider; so do we.
async function checkLockFile(migrationsDir: string, fileNames: string[]): Promise<void> {
  if (!fileNames.includes('migration_lock.toml')) return;
  const text = await readFile(path.join(migrationsDir, 'migration_lock.toml'), 'utf8');
  const provider = /^\s*provider\s*=\s*"([^"]+)"/m.exec(text)?.[1];
  if (provider && provider !== 'postgresql') {
    throw new MigrationError('INVALID_MIGRATIONS_DIR', `migration_lock.toml is for provider "${provider}", expected "postgresql"`);
  }
}

/**
 * Applies pending migrations under Prisma's advisory lock and returns the
 * names applied (empty when the database is up to date). Each migration runs
 * in one transaction together with its bookkeeping row, so a crash leaves no
 * half-applied migration behind.
 */
export async function applyMigrations(
  db: SqlExecutor,
  migrationsDir: string,
  logger: Logger,
  options: ApplyMigrationsOptions = {},
): Promise<string[]> {
  const local = await readMigrations(migrationsDir);
  await acquireLock(db, logger, options);
  try {
    await db.exec(CREATE_MIGRATIONS_TABLE);
    const pending = await pendingMigrations(db, local, logger);
    for (const migration of pending) {
      await applyOne(db, migration, logger);
    }
    return pending.map((m) => m.name);
  } finally {
    await db.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK_KEY]);
  }
}

// Polling pg_try_advisory_lock instead of a blocking pg_advisory_lock lets us
// log while waiting and give up with a clear error instead of hanging.
async function acquireLock(db: SqlExecutor, logger: Logger, options: ApplyMigrationsOptions): Promise<void> {
  const timeoutMs = options.lockTimeoutMs ?? 600_000;
  const pollMs = options.lockPollMs ?? 200;
  const deadline = Date.now() + timeoutMs;
  let logged = false;
  for (;;) {
    const [row] = await db.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [PRISMA_MIGRATE_LOCK_KEY]);
    if (row?.locked) return;
    if (Date.now() >= deadline) {
      throw new MigrationError('LOCK_TIMEOUT', `timed out after ${timeoutMs} ms waiting for the migration advisory lock ${PRISMA_MIGRATE_LOCK_KEY} (another instance or prisma migrate is migrating)`);
    }
    if (!logged) {
      logger.info({ lockKey: PRISMA_MIGRATE_LOCK_KEY }, 'waiting for another instance to finish migrating');
      logged = true;
    }
    await sleep(pollMs);
  }
}

async function pendingMigrations(db: SqlExecutor, local: LocalMigration[], logger: Logger): Promise<LocalMigration[]> {
  const rows = await db.query<MigrationRow>(
    'SELECT "migration_name", "checksum", "finished_at", "rolled_back_at" FROM "_prisma_migrations" ORDER BY "started_at"',
  );
  // Rolled-back rows are history only; Prisma ignores them too.
  const live = rows.filter((r) => r.rolled_back_at === null);

  const unfinished = live.find((r) => r.finished_at === null);
  if (unfinished) {
    throw new MigrationError(
      'UNRESOLVED_FAILED_MIGRATION',
      `migration ${unfinished.migration_name} started but never finished (a failed \`prisma migrate deploy\`?). ` +
        'Inspect the database, then run `prisma migrate resolve --rolled-back` or `--applied` for it.',
      unfinished.migration_name,
    );
  }

  const applied = new Map(live.map((r) => [r.migration_name, r.checksum]));
  const localNames = new Set(local.map((m) => m.name));
  for (const migration of local) {
    const checksum = applied.get(migration.name);
    if (checksum !== undefined && checksum !== migration.checksum) {
      throw new MigrationError(
        'CHECKSUM_MISMATCH',
        `migration ${migration.name} was modified after it was applied (database checksum ${checksum}, file ${migration.checksum}). ` +
          'Applied migrations must not be edited: restore the file and put the change in a new migration.',
        migration.name,
      );
    }
  }
  // A newer release may already have migrated this database (rolling deploy):
  // an older instance can still run, so warn rather than fail.
  const unknown = [...applied.keys()].filter((name) => !localNames.has(name));
  if (unknown.length > 0) {
    logger.warn({ migrations: unknown }, 'database has migrations this build does not know (newer release?)');
  }
  return local.filter((m) => !applied.has(m.name));
}

async function applyOne(db: SqlExecutor, migration: LocalMigration, logger: Logger): Promise<void> {
  const id = randomUUID();
  const started = performance.now();
  await db.exec('BEGIN');
  try {
    await db.query(
      'INSERT INTO "_prisma_migrations" ("id", "checksum", "migration_name", "started_at", "applied_steps_count") VALUES ($1, $2, $3, now(), 0)',
      [id, migration.checksum, migration.name],
    );
    await db.exec(migration.sql);
    await db.query(
      'UPDATE "_prisma_migrations" SET "finished_at" = clock_timestamp(), "applied_steps_count" = 1 WHERE "id" = $1',
      [id],
    );
    await db.exec('COMMIT');
  } catch (error) {
    await recordFailure(db, migration, error, logger);
    throw new MigrationError('MIGRATION_FAILED', `migration ${migration.name} failed and was rolled back: ${errorMessage(error)}`, migration.name, { cause: error });
  }
  logger.info({ migration: migration.name, ms: Math.round(performance.now() - started) }, 'applied migration');
}

// The transaction undid the migration, so record it as rolled back: that
// keeps the history `prisma migrate status` shows and lets the next start
// retry it. Best effort: the original error matters more than this row.
async function recordFailure(db: SqlExecutor, migration: LocalMigration, error: unknown, logger: Logger): Promise<void> {
  try {
    await db.exec('ROLLBACK');
    const logs = error instanceof Error ? (error.stack ?? error.message) : String(error);
    await db.query(
      'INSERT INTO "_prisma_migrations" ("id", "checksum", "migration_name", "logs", "rolled_back_at", "started_at", "applied_steps_count") VALUES ($1, $2, $3, $4, now(), now(), 0)',
      [randomUUID(), migration.checksum, migration.name, logs],
    );
  } catch (recordError) {
    logger.error({ err: recordError, migration: migration.name }, 'could not record the failed migration');
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
