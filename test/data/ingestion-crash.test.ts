// A server killed (SIGKILL) in the middle of ingesting, then started again: every file whose
// upload was answered 200 ends COMPLETED exactly once, with its whole passage set, and no
// item was ever searchable with part of its passages. The server runs as a child process
// (`node --import tsx server/main.ts`) on an on-disk PGlite data directory, and on
// PostgreSQL, where the test also watches the database while the server works.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Database } from '../../server/storage/database.js';
import { createLogger } from '../../server/logging.js';
import { openDatabase } from '../../server/storage/index.js';
import { startTestPlatform } from '../support/platform.js';
import { createTestDatabase, describePostgres, type TestDatabase } from '../support/postgres.js';
import { SERVER_FROM_SOURCE, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { uploadForm, type Upload } from './ingestion.suite.js';

/** Starts `server/main.ts` with `env` and resolves once it listens. */
function startServer(env: Record<string, string>): Promise<ServerProcess> {
  return startServerProcess(SERVER_FROM_SOURCE, { ...process.env, PORT: '0', MGMT_PORT: '0', LOG_LEVEL: 'info', BOOTSTRAP_ADMIN_KEY: 'false', ...env });
}

/** Markdown documents of `paragraphs` passages each, all different. */
function documents(count: number, paragraphs: number, label: string): Upload[] {
  return Array.from({ length: count }, (_, d) => ({
    name: `${label}-${d}.md`,
    content: [`# ${label} document ${d}`, ...Array.from({ length: paragraphs }, (_, p) => `## Part ${p}\n\nDocument ${d} of ${label}, passage ${p}: ${'words that fill a passage '.repeat(6)}`)].join('\n\n'),
  }));
}

async function itemStatus(apiUrl: string, key: string, itemId: string): Promise<string> {
  // A busy server may drop an idle kept-alive connection as the client reuses it: ask again.
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(`${apiUrl}/engine/v2/items/${itemId}`, { headers: { authorization: `Bearer ${key}` } });
      return ((await res.json()) as { status: string }).status;
    } catch (error) {
      if (attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

async function upload(apiUrl: string, key: string, publisherId: string, files: Upload[]): Promise<string[]> {
  const res = await fetch(`${apiUrl}/ingestion/v2/files`, { method: 'POST', body: uploadForm(publisherId, files), headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { ingesting: string[] }).ingesting;
}

/**
 * Items shown as searchable (COMPLETED) without exactly their whole passage set. An item not
 * yet COMPLETED may hold staged passages: retrieval never reads those (search-index.test.ts).
 */
const PARTIAL_ITEMS = `
  SELECT i.id FROM items i LEFT JOIN (SELECT item_id, count(*)::int AS n, max(ordinal) AS last FROM chunks GROUP BY item_id) c ON c.item_id = i.id
   WHERE i.status = 'COMPLETED' AND (COALESCE(c.n, 0) <> i.chunk_count OR COALESCE(c.last, -1) <> i.chunk_count - 1)`;

/**
 * The scenario. `env` points the child at the database; `watch`, when given, is a database
 * connection the test may read while the child runs (PostgreSQL only).
 */
async function crashAndResume(env: Record<string, string>, inspect: () => Promise<Database>, watch?: Database): Promise<void> {
  // Prepare the database in process: an organization, its publisher and a key.
  const setup = await startTestPlatform({ ...(env.DATA_DIR && { dataDir: env.DATA_DIR }), ...(env.DATABASE_URL && { databaseUrl: env.DATABASE_URL }), ingestionWorkers: 0, logLevel: 'silent' });
  const { adminKey: key } = setup;
  const publisherId = setup.bootstrap!.publisherId;
  await setup.close();

  const partialSeen: string[] = [];
  let watching = true;
  const watcher = watch
    ? (async () => {
        while (watching) {
          const rows = await watch.prisma.$queryRawUnsafe<{ id: string }[]>(PARTIAL_ITEMS);
          partialSeen.push(...rows.map((r) => r.id));
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      })()
    : Promise.resolve();

  let first: ServerProcess | undefined;
  let second: ServerProcess | undefined;
  try {
    first = await startServer(env);
    // Long enough (60 passages each) that an item spends seconds embedding.
    const ids = await upload(first.apiUrl, key, publisherId, documents(6, 60, 'first'));
    // Committed (answered 200) while others are being ingested: must survive the kill.
    const last = await upload(first.apiUrl, key, publisherId, documents(2, 3, 'last'));
    // Kill it in the middle of embedding an item, once some items are done and others not.
    for (const deadline = Date.now() + 120_000; ; ) {
      const statuses = await Promise.all(ids.map((id) => itemStatus(first!.apiUrl, key, id)));
      if (statuses.includes('EMBEDDING') && statuses.includes('COMPLETED') && statuses.filter((s) => s !== 'COMPLETED').length >= 3) break;
      if (Date.now() > deadline) throw new Error(`never saw some items done, one embedding and others not started: ${statuses.join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    first.process.kill('SIGKILL');
    await first.exited;
    // What the kill interrupted, as the dead server left it: the items whose jobs it held. A
    // status read before the kill may be stale by then on a busy machine (that item may have
    // finished in between, and the next one not have reached EMBEDDING yet).
    const left = await inspect();
    const interrupted = await left.prisma.ingestionJob
      .findMany({ where: { itemId: { in: ids }, status: 'RUNNING' }, select: { itemId: true } })
      .then((rows) => rows.map((r) => r.itemId))
      .finally(() => left.close());
    expect(interrupted.length, 'items whose jobs the kill interrupted').toBeGreaterThan(0);
    ids.push(...last);

    second = await startServer(env);
    const deadline = Date.now() + 150_000;
    for (const id of ids) {
      for (;;) {
        const status = await itemStatus(second.apiUrl, key, id);
        expect(status).not.toBe('FAILED');
        if (status === 'COMPLETED') break;
        if (Date.now() > deadline) throw new Error(`item ${id} still ${status} after the restart`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    second.process.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    watching = false;
    await watcher;

    const db = await inspect();
    try {
      const items = await db.prisma.item.findMany({ where: { id: { in: ids } }, include: { chunks: { select: { ordinal: true } }, ingestionJobs: true } });
      expect(items).toHaveLength(ids.length);
      for (const item of items) {
        expect(item.status).toBe('COMPLETED');
        // The whole set, once: ordinals 0..n-1, no gap, no duplicate.
        expect(item.chunks.map((c) => c.ordinal).sort((a, b) => a - b)).toEqual(Array.from({ length: item.chunkCount }, (_, i) => i));
        expect(item.chunkCount).toBeGreaterThan(0);
        expect(item.ingestionJobs.map((j) => j.status)).toEqual(['DONE']);
      }
      expect(await db.prisma.$queryRawUnsafe<{ id: string }[]>(PARTIAL_ITEMS)).toEqual([]);
      expect(await db.prisma.ingestionJobPart.count()).toBe(0);
      // The items left embedding when the server died were really interrupted: their jobs ran again.
      for (const resumed of items.filter((i) => interrupted.includes(i.id))) {
        expect(resumed.ingestionJobs[0]!.attempts, 'attempts of an interrupted job').toBeGreaterThan(1);
      }
    } finally {
      await db.close();
    }
    expect(partialSeen).toEqual([]);
  } finally {
    watching = false;
    await watcher.catch(() => undefined);
    for (const child of [first, second]) if (child && child.process.exitCode === null) child.process.kill('SIGKILL');
  }
}

describe('a server killed mid-ingestion resumes on restart (PGlite on disk)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ingestion-crash-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loses no committed file and indexes each exactly once', async () => {
    const dataDir = join(dir, 'pglite');
    await crashAndResume({ DATA_DIR: dataDir }, () => openDatabase({ dataDir, logger: createLogger('silent') }));
  }, 300_000);
});

describePostgres('a server killed mid-ingestion resumes on restart (PostgreSQL)', () => {
  let database: TestDatabase | undefined;
  afterAll(() => database?.drop());

  it('loses no committed file, indexes each exactly once, and never shows a partial item', async () => {
    database = await createTestDatabase('ingestion_crash');
    const url = database.url;
    const open = () => openDatabase({ databaseUrl: url, dataDir: 'unused', logger: createLogger('silent') });
    const watch = await open();
    try {
      // A short lease: the killed instance's jobs are taken over two seconds after it died.
      await crashAndResume({ DATABASE_URL: url, INGESTION_LEASE_MS: '2000' }, open, watch);
    } finally {
      await watch.close();
    }
  }, 300_000);
});
