// Shared by the storage suites: a log-capturing pino logger, throwaway copies
// of the migrations folder, and the CRUD round trip both backends must pass.
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { expect } from 'vitest';
import { DEFAULT_MIGRATIONS_DIR, type Database, type SqlExecutor } from '../../server/storage/index.js';
import { readMigrations } from '../../server/storage/migrate.js';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export function captureLogger(): { logger: pino.Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  return { logger, lines };
}

export const WARN = 40;

export async function tempDir(prefix: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `${prefix}-`));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** A writable copy of prisma/migrations, for tests that add or tamper with migrations. */
export async function copyOfMigrations(): Promise<{ dir: string; remove(): Promise<void> }> {
  const temp = await tempDir('migrations');
  await cp(DEFAULT_MIGRATIONS_DIR, temp.dir, { recursive: true });
  return temp;
}

/** organization → publisher → item → chunks, then reads, updates and a cascade delete. */
export async function crudRoundTrip(db: Database): Promise<void> {
  const { prisma } = db;
  const suffix = Math.random().toString(36).slice(2, 8);
  const org = await prisma.organization.create({ data: { name: `org-${suffix}` } });
  const publisher = await prisma.publisher.create({ data: { name: `pub-${suffix}`, organizationId: org.id } });
  const item = await prisma.item.create({
    data: {
      publisherId: publisher.id,
      producerId: 'prod-1',
      fileName: 'psalms.txt',
      title: 'Psalms',
      author: ['David', 'Asaph'],
      itemTags: ['poetry'],
      publicationDate: 'circa 1000 BC',
      itemExtra: { pages: 150 },
      contentHash: 'a'.repeat(64),
    },
  });
  expect(item.id).toMatch(/^[0-9a-f-]{36}$/);
  expect(item.status).toBe('QUEUED');
  expect(item.visibleInSearch).toBe(true);
  expect(item.etag).toMatch(/^[0-9a-f-]{36}$/);
  expect(item.uploadDate).toBeInstanceOf(Date);

  await prisma.chunk.createMany({
    data: [
      { itemId: item.id, publisherId: publisher.id, ordinal: 0, content: 'The Lord is my shepherd; I shall not want.', tokenCount: 10 },
      { itemId: item.id, publisherId: publisher.id, ordinal: 1, content: 'He leadeth me beside the still waters.', tokenCount: 8 },
    ],
  });
  await prisma.item.update({ where: { id: item.id }, data: { chunkCount: 2, status: 'COMPLETED' } });

  const loaded = await prisma.item.findUniqueOrThrow({
    where: { publisherId_producerId: { publisherId: publisher.id, producerId: 'prod-1' } },
    include: { chunks: { orderBy: { ordinal: 'asc' } }, publisher: { include: { organization: true } } },
  });
  expect(loaded.author).toEqual(['David', 'Asaph']);
  expect(loaded.itemExtra).toEqual({ pages: 150 });
  expect(loaded.chunkCount).toBe(2);
  expect(loaded.updatedAt.getTime()).toBeGreaterThanOrEqual(item.updatedAt.getTime());
  expect(loaded.chunks.map((c) => c.ordinal)).toEqual([0, 1]);
  expect(loaded.publisher.organization.name).toBe(`org-${suffix}`);

  // duplicate content for the same publisher is refused by the database
  await expect(
    prisma.item.create({ data: { publisherId: publisher.id, fileName: 'copy.txt', contentHash: 'a'.repeat(64) } }),
  ).rejects.toMatchObject({ code: 'P2002' });

  // BigInt money and keyset-indexed rows round-trip
  const usage = await prisma.usageRecord.create({
    data: { organizationId: org.id, operation: 'chat.completions', costMicros: 12_345_678_901n, traceId: 'trace-1' },
  });
  expect(usage.costMicros).toBe(12_345_678_901n);

  // a document's keyword postings go with its passages (the triggers of the keyword statistics migration)
  await prisma.itemTerm.create({ data: { publisherId: publisher.id, term: 'shepherd', itemId: item.id, tf: 1, docTerms: 9 } });
  await prisma.chunk.deleteMany({ where: { itemId: item.id, ordinal: 1 } });
  expect(await prisma.itemTerm.count({ where: { itemId: item.id } })).toBe(0);

  // deleting the item removes its chunks
  await prisma.item.delete({ where: { id: item.id } });
  expect(await prisma.chunk.count({ where: { itemId: item.id } })).toBe(0);
}

/** `_prisma_migrations` has Prisma's shape and one finished row per migration, checksum = sha256(file). */
export async function expectPrismaBookkeeping(db: SqlExecutor, migrationsDir: string): Promise<void> {
  const columns = await db.query<{ column_name: string; data_type: string; character_maximum_length: number | null; is_nullable: string }>(
    `SELECT column_name, data_type, character_maximum_length, is_nullable FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = '_prisma_migrations' ORDER BY ordinal_position`,
  );
  expect(columns.map((c) => [c.column_name, c.data_type, c.character_maximum_length, c.is_nullable])).toEqual([
    ['id', 'character varying', 36, 'NO'],
    ['checksum', 'character varying', 64, 'NO'],
    ['finished_at', 'timestamp with time zone', null, 'YES'],
    ['migration_name', 'character varying', 255, 'NO'],
    ['logs', 'text', null, 'YES'],
    ['rolled_back_at', 'timestamp with time zone', null, 'YES'],
    ['started_at', 'timestamp with time zone', null, 'NO'],
    ['applied_steps_count', 'integer', null, 'NO'],
  ]);

  const rows = await db.query<{
    id: string; checksum: string; migration_name: string; logs: string | null;
    finished_at: Date | null; rolled_back_at: Date | null; started_at: Date; applied_steps_count: number;
  }>('SELECT * FROM "_prisma_migrations" ORDER BY migration_name');
  const names = (await readdir(migrationsDir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  expect(rows.map((r) => r.migration_name)).toEqual(names);
  for (const row of rows) {
    const bytes = await readFile(path.join(migrationsDir, row.migration_name, 'migration.sql'));
    expect(row.checksum).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(row.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(row.logs).toBeNull();
    expect(row.rolled_back_at).toBeNull();
    expect(row.applied_steps_count).toBe(1);
    expect(row.finished_at).toBeInstanceOf(Date);
    expect(row.finished_at!.getTime()).toBeGreaterThanOrEqual(new Date(row.started_at).getTime());
  }
}

/**
 * An interactive Serializable transaction rolls back on error, and a query
 * issued outside it meanwhile never sees its writes (on PGlite, one shared
 * connection, the adapter must queue it until the transaction ends).
 */
export async function transactionRoundTrip(db: Database): Promise<void> {
  const { prisma } = db;
  const name = `tx-${Math.random().toString(36).slice(2, 8)}`;
  let seenOutside: number | undefined;
  let outside: Promise<unknown> | undefined;
  await expect(
    prisma.$transaction(
      async (tx) => {
        await tx.organization.create({ data: { name } });
        outside = prisma.organization.count({ where: { name } }).then((n) => (seenOutside = n));
        await new Promise((resolve) => setTimeout(resolve, 50));
        throw new Error('roll back');
      },
      { isolationLevel: 'Serializable' },
    ),
  ).rejects.toThrow('roll back');
  await outside;
  expect(seenOutside).toBe(0);
  expect(await prisma.organization.count({ where: { name } })).toBe(0);
}

/** Every migration in prisma/migrations, in the order they apply. */
export const ALL_MIGRATIONS = (await readMigrations(DEFAULT_MIGRATIONS_DIR)).map((m) => m.name);
