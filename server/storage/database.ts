// Opens the platform database: embedded PGlite (with pgvector) when no URL is
// configured, PostgreSQL for a postgres:// URL. Migrations are applied before
// the Prisma client is handed out, so callers always see the current schema.
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import type { Logger } from 'pino';
import { PrismaClient } from '../../generated/prisma/client.js';
import { redactUrl } from '../logging.js';
import { detectCapabilities, reportCapabilities, type DatabaseCapabilities } from './capabilities.js';
import { lockDataDir } from './data-dir-lock.js';
import { applyMigrations } from './migrate.js';
import { pgClientExecutor, pgliteExecutor, type SqlExecutor } from './sql-executor.js';

export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));
export const MEMORY_DATA_DIR = 'memory://';

export interface OpenDatabaseOptions {
  /** postgres:// or postgresql:// URL; absent means embedded PGlite */
  databaseUrl?: string;
  /** PGlite data directory (created if missing), or 'memory://' */
  dataDir: string;
  logger: Logger;
  /** defaults to prisma/migrations of this repository */
  migrationsDir?: string;
}

export interface Database {
  prisma: PrismaClient;
  kind: 'pglite' | 'postgres';
  capabilities: DatabaseCapabilities;
  /** migrations this open applied (empty when the schema was current) */
  appliedMigrations: readonly string[];
  /** round trip of `SELECT 1`, in milliseconds */
  ping(): Promise<number>;
  close(): Promise<void>;
}

interface Migrated {
  capabilities: DatabaseCapabilities;
  applied: string[];
}

export async function openDatabase(opts: OpenDatabaseOptions): Promise<Database> {
  const migrationsDir = opts.migrationsDir ?? DEFAULT_MIGRATIONS_DIR;
  const url = opts.databaseUrl?.trim();
  if (!url) return openPglite(opts.dataDir, migrationsDir, opts.logger);
  if (/^postgres(ql)?:\/\//i.test(url)) return openPostgres(url, migrationsDir, opts.logger);
  throw new Error(`unsupported database URL scheme in ${redactUrl(url)}: expected postgres:// or postgresql://`);
}

async function migrateAndInspect(executor: SqlExecutor, migrationsDir: string, logger: Logger): Promise<Migrated> {
  const applied = await applyMigrations(executor, migrationsDir, logger);
  const capabilities = await detectCapabilities(executor);
  return { applied, capabilities };
}

async function openPglite(dataDir: string, migrationsDir: string, logger: Logger): Promise<Database> {
  let unlock = () => {};
  if (dataDir !== MEMORY_DATA_DIR) {
    await mkdir(dataDir, { recursive: true });
    unlock = lockDataDir(dataDir);
  }
  // Loaded only here: a server on PostgreSQL never pays for PGlite's modules.
  const [{ PGlite }, { vector }, { PrismaPGlite }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/vector'),
    import('pglite-prisma-adapter'),
  ]);
  // One PGlite instance serves both migrations and Prisma: it is a single
  // in-process connection, and a data directory must have only one owner.
  let pglite: PGlite;
  try {
    pglite = await PGlite.create(dataDir, { extensions: { vector } });
  } catch (error) {
    unlock();
    throw error;
  }
  try {
    const { applied, capabilities } = await migrateAndInspect(pgliteExecutor(pglite), migrationsDir, logger);
    const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite), errorFormat: 'minimal' });
    logger.info({ kind: 'pglite', dataDir, applied, capabilities }, 'database ready');
    reportCapabilities(capabilities, logger);
    return makeDatabase('pglite', prisma, { capabilities, applied }, async () => {
      await prisma.$disconnect();
      await pglite.close();
      unlock();
    });
  } catch (error) {
    await pglite.close().catch(() => {});
    unlock();
    throw error;
  }
}

async function openPostgres(url: string, migrationsDir: string, logger: Logger): Promise<Database> {
  // Migrations use their own short-lived connection: the advisory lock and
  // the per-migration transaction need one session, not a pool.
  const client = new pg.Client({ connectionString: url });
  // An unhandled 'error' event (server restart mid-migration) would crash the
  // process; the failing query reports the problem instead.
  client.on('error', (err) => logger.warn({ err }, 'migration connection error'));
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`cannot connect to PostgreSQL at ${redactUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
  let migrated: Migrated;
  try {
    migrated = await migrateAndInspect(pgClientExecutor(client), migrationsDir, logger);
  } finally {
    await client.end();
  }
  const adapter = new PrismaPg(
    { connectionString: url },
    {
      onPoolError: (err) => logger.warn({ err }, 'idle PostgreSQL connection failed; the pool will replace it'),
      onConnectionError: (err) => logger.warn({ err }, 'PostgreSQL connection failed during a transaction'),
    },
  );
  // 'minimal': Prisma's default error text quotes the query's arguments (hashes included) into logs.
  const prisma = new PrismaClient({ adapter, errorFormat: 'minimal' });
  const { applied, capabilities } = migrated;
  logger.info({ kind: 'postgres', url: redactUrl(url), applied, capabilities }, 'database ready');
  reportCapabilities(capabilities, logger);
  return makeDatabase('postgres', prisma, migrated, () => prisma.$disconnect());
}

function makeDatabase(
  kind: Database['kind'],
  prisma: PrismaClient,
  { capabilities, applied }: Migrated,
  close: () => Promise<void>,
): Database {
  let closing: Promise<void> | undefined;
  return {
    prisma,
    kind,
    capabilities,
    appliedMigrations: applied,
    async ping() {
      const started = performance.now();
      await prisma.$queryRaw`SELECT 1`;
      return performance.now() - started;
    },
    // Idempotent: shutdown paths often call close more than once.
    close: () => (closing ??= close()),
  };
}

/** The URL without its password, for logs and error messages. */
