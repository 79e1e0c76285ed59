// The migration runner against embedded PGlite. One PGlite instance (slow to
// start) is shared; each test starts from an empty public schema.
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite/vector';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  applyMigrations,
  DEFAULT_MIGRATIONS_DIR,
  MigrationError,
  pgliteExecutor,
  type SqlExecutor,
} from '../../server/storage/index.js';
import { ALL_MIGRATIONS, captureLogger, copyOfMigrations, expectPrismaBookkeeping, WARN } from './helpers.js';

const INIT = '20261122144449_init';

describe('applyMigrations on PGlite', { timeout: 20_000 }, () => {
  let pglite: PGlite;
  let db: SqlExecutor;

  beforeAll(async () => {
    pglite = await PGlite.create('memory://', { extensions: { vector } });
    db = pgliteExecutor(pglite);
  }, 30_000);
  afterAll(() => pglite?.close());
  beforeEach(async () => {
    await pglite.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public;');
  });

  it('applies the init migration to an empty database, then nothing the second time', async () => {
    const { logger, lines } = captureLogger();
    expect(await applyMigrations(db, DEFAULT_MIGRATIONS_DIR, logger)).toEqual(ALL_MIGRATIONS);
    expect(lines.some((l) => l.msg === 'applied migration' && l.migration === INIT)).toBe(true);
    expect(await applyMigrations(db, DEFAULT_MIGRATIONS_DIR, logger)).toEqual([]);

    const tables = await db.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
    );
    expect(tables.map((t) => t.table_name)).toEqual([
      '_prisma_migrations', 'agents', 'api_keys', 'billing_accounts', 'billing_instances', 'billing_key_pools', 'billing_reservations', 'chats', 'chunks', 'coding_plans', 'collections', 'credit_ledger',
      'idempotency_records', 'ingestion_job_parts', 'ingestion_jobs', 'item_terms', 'items', 'messages', 'oauth_access_tokens', 'oauth_clients', 'organizations', 'publishers', 'rate_limits', 'request_log', 'responses', 'usage_records',
    ]);
    await expectPrismaBookkeeping(db, DEFAULT_MIGRATIONS_DIR);
  });

  it('creates the pgvector column and the keyword statistics column', async () => {
    await applyMigrations(db, DEFAULT_MIGRATIONS_DIR, captureLogger().logger);
    const columns = await db.query<{ column_name: string; udt_name: string; is_generated: string }>(
      `SELECT column_name, udt_name, is_generated FROM information_schema.columns
        WHERE table_name = 'chunks' AND column_name IN ('embedding', 'terms') ORDER BY column_name`,
    );
    expect(columns).toEqual([
      { column_name: 'embedding', udt_name: 'vector', is_generated: 'NEVER' },
      { column_name: 'terms', udt_name: 'jsonb', is_generated: 'NEVER' },
    ]);
  });

  it('reports an applied migration whose file was edited', async () => {
    const copy = await copyOfMigrations();
    try {
      const logger = captureLogger().logger;
      await applyMigrations(db, copy.dir, logger);
      await appendFile(path.join(copy.dir, INIT, 'migration.sql'), '\n-- edited later\n');
      const error = await applyMigrations(db, copy.dir, logger).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MigrationError);
      expect(error).toMatchObject({ code: 'CHECKSUM_MISMATCH', migrationName: INIT });
      expect((error as Error).message).toMatch(/was modified after it was applied/);
    } finally {
      await copy.remove();
    }
  });

  it('rolls a failing migration back, records it as Prisma would, and retries it once fixed', async () => {
    const copy = await copyOfMigrations();
    try {
      const logger = captureLogger().logger;
      const broken = '20990101000000_broken';
      await mkdir(path.join(copy.dir, broken));
      const file = path.join(copy.dir, broken, 'migration.sql');
      await writeFile(file, 'CREATE TABLE "half_done" ("id" INTEGER);\nSELECT * FROM "no_such_table";\n');

      const error = await applyMigrations(db, copy.dir, logger).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'MIGRATION_FAILED', migrationName: broken });
      // init was committed before the failure; the broken one left nothing behind
      const [state] = await db.query<{ half: string | null; orgs: string | null }>(
        `SELECT to_regclass('half_done')::text AS half, to_regclass('organizations')::text AS orgs`,
      );
      expect(state).toEqual({ half: null, orgs: 'organizations' });
      const [failed] = await db.query<{ logs: string; rolled_back_at: Date | null; finished_at: Date | null }>(
        `SELECT logs, rolled_back_at, finished_at FROM "_prisma_migrations" WHERE migration_name = $1`,
        [broken],
      );
      expect(failed!.logs).toContain('no_such_table');
      expect(failed!.rolled_back_at).toBeInstanceOf(Date);
      expect(failed!.finished_at).toBeNull();

      await writeFile(file, 'CREATE TABLE "half_done" ("id" INTEGER);\n');
      expect(await applyMigrations(db, copy.dir, logger)).toEqual([broken]);
    } finally {
      await copy.remove();
    }
  });

  it('refuses to continue past an unfinished migration left by another tool', async () => {
    const logger = captureLogger().logger;
    await applyMigrations(db, DEFAULT_MIGRATIONS_DIR, logger);
    await db.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name) VALUES ('00000000-0000-4000-8000-000000000000', 'x', '20990101000000_crashed')`,
    );
    await expect(applyMigrations(db, DEFAULT_MIGRATIONS_DIR, logger)).rejects.toMatchObject({
      code: 'UNRESOLVED_FAILED_MIGRATION',
      migrationName: '20990101000000_crashed',
    });
  });

  it('warns about, but tolerates, migrations applied by a newer release', async () => {
    const { logger, lines } = captureLogger();
    await applyMigrations(db, DEFAULT_MIGRATIONS_DIR, logger);
    await db.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, finished_at, applied_steps_count)
       VALUES ('00000000-0000-4000-8000-000000000001', 'x', '20990101000000_future', now(), 1)`,
    );
    expect(await applyMigrations(db, DEFAULT_MIGRATIONS_DIR, logger)).toEqual([]);
    expect(lines.find((l) => l.level === WARN)).toMatchObject({ migrations: ['20990101000000_future'] });
  });

  it('rejects a migrations folder written for another provider', async () => {
    const copy = await copyOfMigrations();
    try {
      await writeFile(path.join(copy.dir, 'migration_lock.toml'), 'provider = "sqlite"\n');
      await expect(applyMigrations(db, copy.dir, captureLogger().logger)).rejects.toMatchObject({ code: 'INVALID_MIGRATIONS_DIR' });
    } finally {
      await copy.remove();
    }
  });
});
