// The migration runner against a real PostgreSQL server (no pgvector here),
// including several instances migrating at once.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, expect, it } from 'vitest';
import {
  applyMigrations,
  DEFAULT_MIGRATIONS_DIR,
  pgClientExecutor,
  PRISMA_MIGRATE_LOCK_KEY,
} from '../../server/storage/index.js';
import { createTestDatabase, describePostgres, type TestDatabase } from '../support/postgres.js';
import { ALL_MIGRATIONS, captureLogger, copyOfMigrations, expectPrismaBookkeeping } from './helpers.js';

const INIT = '20261122144449_init';

describePostgres('applyMigrations on PostgreSQL', () => {
  let database: TestDatabase;
  const clients: pg.Client[] = [];

  async function connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    clients.push(client);
    return client;
  }

  beforeEach(async () => {
    database = await createTestDatabase('migrate');
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.end()));
    await database.drop();
  });

  it('applies the init migration to a fresh database without pgvector, then nothing', async () => {
    const db = pgClientExecutor(await connect());
    const logger = captureLogger().logger;
    expect(await applyMigrations(db, DEFAULT_MIGRATIONS_DIR, logger)).toEqual(ALL_MIGRATIONS);
    expect(await applyMigrations(db, DEFAULT_MIGRATIONS_DIR, logger)).toEqual([]);
    await expectPrismaBookkeeping(db, DEFAULT_MIGRATIONS_DIR);

    const columns = await db.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'chunks' AND column_name IN ('embedding', 'terms')`,
    );
    expect(columns.map((c) => c.column_name)).toEqual(['terms']);
  });

  it('applies once when two instances migrate at the same time (advisory lock)', async () => {
    // A slow second migration keeps the lock held long enough for the other
    // instance to really wait on it.
    const copy = await copyOfMigrations();
    try {
      const slow = '20990101000000_slow';
      await mkdir(path.join(copy.dir, slow));
      await writeFile(path.join(copy.dir, slow, 'migration.sql'), 'SELECT pg_sleep(0.5);\nCREATE TABLE "slow_marker" ("id" INTEGER);\n');
      const a = captureLogger();
      const b = captureLogger();
      const [clientA, clientB] = await Promise.all([connect(), connect()]);
      const [first, second] = await Promise.all([
        applyMigrations(pgClientExecutor(clientA), copy.dir, a.logger, { lockPollMs: 50 }),
        applyMigrations(pgClientExecutor(clientB), copy.dir, b.logger, { lockPollMs: 50 }),
      ]);
      expect([...first, ...second].sort()).toEqual([...ALL_MIGRATIONS, slow].sort());
      expect([first, second].filter((applied) => applied.length === 0)).toHaveLength(1);
      const waited = [...a.lines, ...b.lines].filter((l) => l.msg === 'waiting for another instance to finish migrating');
      expect(waited).toHaveLength(1);

      const check = pgClientExecutor(await connect());
      const [counts] = await check.query<{ n: number }>('SELECT count(*)::int AS n FROM "_prisma_migrations"');
      expect(counts!.n).toBe(ALL_MIGRATIONS.length + 1);
    } finally {
      await copy.remove();
    }
  });

  it('gives up with a clear error when the lock stays taken', async () => {
    const holder = await connect();
    await holder.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK_KEY]);
    const db = pgClientExecutor(await connect());
    await expect(
      applyMigrations(db, DEFAULT_MIGRATIONS_DIR, captureLogger().logger, { lockTimeoutMs: 300, lockPollMs: 50 }),
    ).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    await holder.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK_KEY]);
    expect(await applyMigrations(db, DEFAULT_MIGRATIONS_DIR, captureLogger().logger)).toEqual(ALL_MIGRATIONS);
  });

  it('reports a tampered applied migration', async () => {
    const db = pgClientExecutor(await connect());
    await applyMigrations(db, DEFAULT_MIGRATIONS_DIR, captureLogger().logger);
    await db.query(`UPDATE "_prisma_migrations" SET checksum = repeat('0', 64) WHERE migration_name = $1`, [INIT]);
    await expect(applyMigrations(db, DEFAULT_MIGRATIONS_DIR, captureLogger().logger)).rejects.toMatchObject({
      code: 'CHECKSUM_MISMATCH',
      migrationName: INIT,
    });
  });
});
