// openDatabase in embedded mode: PGlite + pgvector + Prisma through the
// pglite adapter, in memory and persisted in a data directory.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../server/storage/index.js';
import { ALL_MIGRATIONS, captureLogger, crudRoundTrip, transactionRoundTrip, tempDir, WARN } from './helpers.js';

describe('openDatabase with PGlite (memory)', { timeout: 20_000 }, () => {
  let db: Database;
  const { logger, lines } = captureLogger();

  beforeAll(async () => {
    db = await openDatabase({ dataDir: 'memory://', logger });
  }, 30_000);
  afterAll(() => db?.close());

  it('is migrated, has pgvector and full-text, and logs no capability warning', () => {
    expect(db.kind).toBe('pglite');
    expect(db.capabilities).toEqual({ vector: true });
    expect(db.appliedMigrations).toEqual(ALL_MIGRATIONS);
    expect(lines.filter((l) => l.level >= WARN)).toEqual([]);
    expect(lines.find((l) => l.msg === 'database ready')).toMatchObject({ kind: 'pglite' });
  });

  it('round-trips organization → publisher → item → chunk through Prisma', async () => {
    await crudRoundTrip(db);
  });

  it('rolls back interactive transactions and isolates them from other queries', async () => {
    await transactionRoundTrip(db);
  });

  it('stores embeddings and ranks chunks by cosine distance (<=>)', async () => {
    const { prisma } = db;
    const org = await prisma.organization.create({ data: { name: 'vector-org' } });
    const publisher = await prisma.publisher.create({ data: { name: 'vector-pub', organizationId: org.id } });
    const item = await prisma.item.create({ data: { publisherId: publisher.id, fileName: 'v.txt' } });
    const vectors = ['[1,0,0]', '[0,1,0]', '[0.9,0.1,0]'];
    for (const [ordinal, embedding] of vectors.entries()) {
      const chunk = await prisma.chunk.create({
        data: { itemId: item.id, publisherId: publisher.id, ordinal, content: `chunk ${ordinal}`, embeddingModel: 'test-3d' },
      });
      await prisma.$executeRaw`UPDATE chunks SET embedding = ${embedding}::vector WHERE id = ${chunk.id}::uuid`;
    }
    const query = '[1,0,0]';
    const ranked = await prisma.$queryRaw<{ ordinal: number; distance: number }[]>`
      SELECT ordinal, (embedding <=> ${query}::vector)::float8 AS distance
        FROM chunks
       WHERE publisher_id = ${publisher.id}::uuid AND embedding IS NOT NULL
       ORDER BY embedding <=> ${query}::vector
       LIMIT 3`;
    expect(ranked.map((r) => r.ordinal)).toEqual([0, 2, 1]);
    expect(ranked[0]!.distance).toBeCloseTo(0, 6);
    expect(ranked[2]!.distance).toBeCloseTo(1, 6);
  });

  it('answers ping', async () => {
    const ms = await db.ping();
    expect(ms).toBeGreaterThanOrEqual(0);
    expect(ms).toBeLessThan(1000);
  });
});

describe('openDatabase with PGlite (data directory)', { timeout: 30_000 }, () => {
  it('creates the directory and keeps data across close and reopen', async () => {
    const temp = await tempDir('pglite');
    const dataDir = path.join(temp.dir, 'nested', 'pglite');
    try {
      const first = await openDatabase({ dataDir, logger: captureLogger().logger });
      await first.prisma.organization.create({ data: { name: 'persisted-org' } });
      await first.close();
      await first.close();

      const second = await openDatabase({ dataDir, logger: captureLogger().logger });
      try {
        expect(second.appliedMigrations).toEqual([]);
        expect(second.capabilities.vector).toBe(true);
        expect(await second.prisma.organization.findUnique({ where: { name: 'persisted-org' } })).not.toBeNull();
      } finally {
        await second.close();
      }
    } finally {
      await temp.remove();
    }
  });

  it('rejects a URL that is not PostgreSQL', async () => {
    await expect(
      openDatabase({ databaseUrl: 'mysql://user:secret@host/db', dataDir: 'memory://', logger: captureLogger().logger }),
    ).rejects.toThrow(/expected postgres:\/\/ or postgresql:\/\/.*/);
    await expect(
      openDatabase({ databaseUrl: 'mysql://user:secret@host/db', dataDir: 'memory://', logger: captureLogger().logger }),
    ).rejects.not.toThrow(/secret/);
  });
});
