// openDatabase against PostgreSQL through @prisma/adapter-pg. The server here
// has no pgvector, which is exactly the degraded mode the platform must boot in.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../server/storage/index.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';
import { ALL_MIGRATIONS, captureLogger, crudRoundTrip, transactionRoundTrip, WARN } from './helpers.js';

describePostgres('openDatabase with PostgreSQL', () => {
  const database = useTestDatabase('open');
  const { logger, lines } = captureLogger();
  let db: Database;

  beforeAll(async () => {
    db = await openDatabase({ databaseUrl: database.url, dataDir: 'unused', logger });
  }, 30_000);
  afterAll(() => db?.close());

  it('migrates on open and reports that pgvector is missing, once, at warn level', () => {
    expect(db.kind).toBe('postgres');
    expect(db.appliedMigrations).toEqual(ALL_MIGRATIONS);
    expect(db.capabilities).toEqual({ vector: false });
    const warnings = lines.filter((l) => l.level === WARN);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      capabilities: { vector: false },
      disabled: ['semantic search', 'grounded retrieval', 'recommendations'],
    });
    expect(warnings[0]!.msg).toMatch(/pgvector is not available/);
  });

  it('round-trips organization → publisher → item → chunk through Prisma', async () => {
    await crudRoundTrip(db);
  });

  it('rolls back interactive transactions and isolates them from other queries', async () => {
    await transactionRoundTrip(db);
  });

  it('answers ping', async () => {
    expect(await db.ping()).toBeLessThan(1000);
  });

  it('applies nothing when a second instance opens the same database', async () => {
    const again = await openDatabase({ databaseUrl: database.url, dataDir: 'unused', logger: captureLogger().logger });
    try {
      expect(again.appliedMigrations).toEqual([]);
    } finally {
      await again.close();
    }
  });
});
