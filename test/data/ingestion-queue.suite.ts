// The ingestion queue and worker below HTTP, on PGlite (ingestion-queue.test.ts) and on
// PostgreSQL (ingestion-queue.postgres.test.ts): the status an item moves through, retries
// with backoff, failure with a reason, a dead worker's job taken over when its lease ends,
// shutdown giving jobs back, and two instances sharing one queue without doing a job twice.
// Passages go to the real chunk index; the embedder is a deterministic stand-in whose
// behaviour (failing, blocking) each test sets.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { ApiError } from '../../server/errors.js';
import { JobQueue, LeaseLostError, type ClaimedJob, type QueueOptions } from '../../server/data/ingestion/job-queue.js';
import { chunkOptions, STAGE_BATCH, type PassageEmbedder } from '../../server/data/ingestion/pipeline.js';
import { chunkText } from '../../server/data/ingestion/chunker.js';
import { IngestionWorker } from '../../server/data/ingestion/worker.js';
import { ParsePool } from '../../server/data/ingestion/parse-pool.js';
import { loadConfig } from '../../server/config.js';
import { MEDIA_TYPES, type DocumentFormat } from '../../server/data/ingestion/formats.js';
import { Collections } from '../../server/data/search/collections.js';
import type { ChunkIndex, EmbeddingSpace } from '../../server/data/search/chunk-index.js';
import { PgChunkIndex } from '../../server/data/search/pg-chunk-index.js';
import { OrganizationService } from '../../server/identity/organizations.js';
import { createLogger } from '../../server/logging.js';
import type { Database } from '../../server/storage/database.js';

const SPACE: EmbeddingSpace = { model: 'test-embedding', dimensions: 8 };
// A lease long enough that a busy machine never lets one lapse by accident (the takeover test ends it by hand).
const QUEUE: QueueOptions = { leaseMs: 15_000, maxAttempts: 3, retryBaseMs: 20 };
const logger = createLogger('silent');

/** A vector from the text's hash: deterministic, the right size, never all zero. */
function vectorOf(text: string): number[] {
  const digest = createHash('sha256').update(text).digest();
  return Array.from({ length: SPACE.dimensions }, (_, i) => (digest[i]! + 1) / 256);
}

/** The stand-in embedder: `behaviour` runs before each batch (throw to fail, await to block). */
function testEmbedder(behaviour: { before?: (texts: string[], signal: AbortSignal) => Promise<void> | void; calls: string[][] }): PassageEmbedder {
  return {
    async embed(_space, texts, signal) {
      await behaviour.before?.(texts, signal);
      behaviour.calls.push(texts);
      return texts.map(vectorOf);
    },
    maxInputTokens: () => 512,
  };
}

async function until<T>(probe: () => Promise<T | undefined | null | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * `open` opens a connection to the suite's database: on PostgreSQL each call is a separate
 * instance's client; on PGlite (one owner per database) the same one.
 */
export function ingestionQueueSuite(open: () => Promise<Database>): void {
  let db: Database;
  let publisherId: string;
  let chunkIndex: PgChunkIndex;
  // Parse threads with the default limits, shared by every worker of the suite.
  const parser = new ParsePool(loadConfig({}));
  const opened: Database[] = [];

  const connect = async () => {
    const database = await open();
    if (!opened.includes(database)) opened.push(database);
    return database;
  };

  beforeAll(async () => {
    db = await connect();
    const organizations = new OrganizationService(db.prisma);
    const organization = await organizations.createOrganization(`queue-${randomUUID()}`);
    publisherId = (await organizations.createPublisher(organization.name, `queue-press-${randomUUID()}`)).id;
    chunkIndex = new PgChunkIndex(db.prisma, db.capabilities, new Collections(db.prisma, 'GlooProd', SPACE));
  }, 60_000);
  afterAll(async () => {
    await parser.close();
    for (const database of opened.reverse()) await database.close();
  });

  /** An item and its queued job, as an upload stores them. */
  async function enqueue(queue: JobQueue, content: string | Buffer, format: DocumentFormat = 'md'): Promise<string> {
    const bytes = Buffer.from(content);
    return db.prisma.$transaction(async (tx) => {
      const item = await tx.item.create({ data: { publisherId, fileName: `doc-${randomUUID()}.${format}`, contentHash: createHash('sha256').update(bytes).digest('hex') } });
      await queue.enqueue(
        tx,
        { itemId: item.id, fileName: item.fileName, mediaType: MEDIA_TYPES[format], sizeBytes: bytes.length, contentHash: item.contentHash! },
        (async function* () {
          yield bytes;
        })(),
      );
      return item.id;
    });
  }

  const item = (id: string) => db.prisma.item.findUniqueOrThrow({ where: { id } });
  const jobOf = (itemId: string) => db.prisma.ingestionJob.findFirstOrThrow({ where: { itemId }, orderBy: { createdAt: 'desc' } });
  /** The item at its final status and its job settled (the job is closed just after the passages commit). */
  const completed = async (id: string) => {
    const current = await item(id);
    if (current.status !== 'COMPLETED' && current.status !== 'FAILED') return false;
    return ['DONE', 'FAILED'].includes((await jobOf(id)).status) && current;
  };

  /** Claims the job of item `id` for `owner`, giving back any other job claimed on the way. */
  const claimItem = (queue: JobQueue, owner: string, id: string) =>
    until(async () => {
      const next = await queue.claim(owner);
      return next && next.itemId === id ? next : next && (await queue.release(next, owner), null);
    });
  const expireLease = (id: string) => db.prisma.$executeRaw`UPDATE ingestion_jobs SET lease_until = now() - interval '1 second' WHERE item_id = ${id}::uuid AND status = 'RUNNING'`;

  function startWorker(queue: JobQueue, embedder: PassageEmbedder, concurrency = 1): IngestionWorker {
    const worker = new IngestionWorker({ queue, chunkIndex, embedder, parser }, logger, { concurrency, pollMs: 50 });
    worker.start();
    return worker;
  }

  it('moves an item through FETCHING, NORMALIZING, CHUNKING, EMBEDDING to COMPLETED, its passages stored at once', async () => {
    const queue = new JobQueue(db.prisma, QUEUE);
    const seen: string[] = [];
    const original = queue.advance.bind(queue);
    queue.advance = async (job, owner, status, extra) => {
      await original(job, owner, status, extra);
      seen.push((await item(job.itemId)).status);
    };
    const statusWhileEmbedding: string[] = [];
    const calls: string[][] = [];
    const id = await enqueue(queue, '# One\n\nFirst passage.\n\n# Two\n\nSecond passage.');
    expect((await item(id)).status).toBe('QUEUED');
    const worker = startWorker(
      queue,
      testEmbedder({
        calls,
        before: async () => {
          statusWhileEmbedding.push((await item(id)).status);
          // Until the chunk index stores them all, none of the item's passages is visible.
          expect(await db.prisma.chunk.count({ where: { itemId: id } })).toBe(0);
        },
      }),
    );
    try {
      const done = await until(() => completed(id));
      expect(done).toMatchObject({ status: 'COMPLETED', chunkCount: 2, failureReason: null });
      expect(seen).toEqual(['FETCHING', 'NORMALIZING', 'CHUNKING', 'EMBEDDING']);
      expect(statusWhileEmbedding).toEqual(['EMBEDDING']);
      expect(await db.prisma.chunk.count({ where: { itemId: id } })).toBe(2);
      expect(await jobOf(id)).toMatchObject({ status: 'DONE', attempts: 1, leaseOwner: null });
      expect(await db.prisma.ingestionJobPart.count({ where: { job: { itemId: id } } })).toBe(0);
    } finally {
      await worker.stop();
    }
  });

  it('stores a large file in 1 MiB parts and reads it back whole', async () => {
    const queue = new JobQueue(db.prisma, QUEUE);
    const paragraph = 'Parts of a stored file are read back in order. ';
    const text = Array.from({ length: 60_000 }, (_, i) => `${paragraph}${i}.`).join('\n\n');
    const id = await enqueue(queue, text, 'txt');
    const job = await jobOf(id);
    expect(await db.prisma.ingestionJobPart.count({ where: { jobId: job.id } })).toBe(Math.ceil(Buffer.byteLength(text) / (1024 * 1024)));
    const claimed = await until(async () => {
      const next = await queue.claim('reader');
      return next && next.itemId === id ? next : next && (await queue.release(next, 'reader'), null);
    });
    expect((await queue.readFile(claimed)).toString()).toBe(text);
    await queue.release(claimed, 'reader');
    await db.prisma.item.update({ where: { id }, data: { deletedAt: new Date() } });
    // A deleted item's job is dropped by the next worker.
    const worker = startWorker(queue, testEmbedder({ calls: [] }));
    try {
      await until(async () => (await jobOf(id)).status === 'DONE');
      expect(await db.prisma.chunk.count({ where: { itemId: id } })).toBe(0);
    } finally {
      await worker.stop();
    }
  });

  it('retries a failed attempt after a backoff, then completes', async () => {
    const queue = new JobQueue(db.prisma, QUEUE);
    const id = await enqueue(queue, 'Retried until the embedder answers.');
    const between: { status: string; error: string | null; itemStatus: string }[] = [];
    let failures = 0;
    const worker = startWorker(
      queue,
      testEmbedder({
        calls: [],
        before: async () => {
          if (failures > 0) {
            const job = await jobOf(id);
            between.push({ status: job.status, error: job.error, itemStatus: (await item(id)).status });
          }
          if (failures++ < 2) throw new ApiError('EMBEDDING_PROVIDER_UNAVAILABLE', `embedder down (${failures})`);
        },
      }),
    );
    try {
      expect(await until(() => completed(id))).toMatchObject({ status: 'COMPLETED', failureReason: null });
      // Each retry found the previous failure recorded on the job.
      expect(between.map((b) => b.error)).toEqual(['embedder down (1)', 'embedder down (2)']);
      expect(await jobOf(id)).toMatchObject({ status: 'DONE', attempts: 3 });
    } finally {
      await worker.stop();
    }
  });

  it('backs off exponentially with jitter: attempt n waits base x 2^(n-1) x [0.5, 1]; a job is not claimed before it is due', async () => {
    const queue = new JobQueue(db.prisma, { ...QUEUE, retryBaseMs: 60_000 });
    const id = await enqueue(queue, 'Backed off between attempts.');
    for (let attempt = 1; attempt < QUEUE.maxAttempts; attempt++) {
      const job = await claimItem(queue, 'backoff', id);
      expect(job.attempts).toBe(attempt);
      expect(await queue.fail(job, 'backoff', `down ${attempt}`, true)).toBe('retrying');
      // run_after and updated_at come from the same statement's now(): their gap is the delay.
      const [{ delay }] = await db.prisma.$queryRaw<{ delay: number }[]>`
        SELECT (extract(epoch FROM run_after - updated_at) * 1000)::float8 AS delay FROM ingestion_jobs WHERE item_id = ${id}::uuid`;
      const full = 60_000 * 2 ** (attempt - 1);
      expect(delay).toBeGreaterThanOrEqual(full * 0.5);
      expect(delay).toBeLessThanOrEqual(full);
      expect(await jobOf(id)).toMatchObject({ status: 'QUEUED', error: `down ${attempt}` });
      // Not due: nobody takes it, whatever else is due (all of that is given back after).
      const taken: ClaimedJob[] = [];
      for (let next = await queue.claim('early'); next; next = await queue.claim('early')) taken.push(next);
      for (const other of taken) await queue.release(other, 'early');
      expect(taken.map((j) => j.itemId)).not.toContain(id);
      await db.prisma.$executeRaw`UPDATE ingestion_jobs SET run_after = now() WHERE item_id = ${id}::uuid`;
    }
    // The last attempt fails for good, whatever the failure.
    const last = await claimItem(queue, 'backoff', id);
    expect(await queue.fail(last, 'backoff', 'down for good', true)).toBe('failed');
    expect(await item(id)).toMatchObject({ status: 'FAILED', failureReason: 'down for good' });
  });

  it('fails an item with the reason once attempts run out; an unreadable file fails at once', async () => {
    const queue = new JobQueue(db.prisma, QUEUE);
    const flaky = await enqueue(queue, 'The embedder never answers for this one.');
    const corrupt = await enqueue(queue, Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(200, 7)]), 'pdf');
    const worker = startWorker(
      queue,
      testEmbedder({
        calls: [],
        before: () => {
          throw new ApiError('EMBEDDING_PROVIDER_UNAVAILABLE', 'The embedding provider is temporarily unavailable.');
        },
      }),
    );
    try {
      expect(await until(() => completed(flaky))).toMatchObject({ status: 'FAILED', failureReason: 'The embedding provider is temporarily unavailable.' });
      expect(await jobOf(flaky)).toMatchObject({ status: 'FAILED', attempts: QUEUE.maxAttempts });
      const unreadable = await until(() => completed(corrupt));
      expect(unreadable.status).toBe('FAILED');
      expect(unreadable.failureReason).toMatch(/could not be read as a PDF/);
      expect(await jobOf(corrupt)).toMatchObject({ status: 'FAILED', attempts: 1 });
    } finally {
      await worker.stop();
    }
  });

  it('takes over the job of a worker that died once its lease runs out; the dead one can no longer write', async () => {
    const queue = new JobQueue(db.prisma, QUEUE);
    const id = await enqueue(queue, 'A worker claimed this and died.');
    const dead = await until(async () => {
      const next = await queue.claim('dead-worker');
      return next && next.itemId === id ? next : next && (await queue.release(next, 'dead-worker'), null);
    });
    await queue.advance(dead, 'dead-worker', 'FETCHING');
    const worker = startWorker(queue, testEmbedder({ calls: [] }));
    try {
      // Still leased: nobody else takes it.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await jobOf(id)).toMatchObject({ status: 'RUNNING', leaseOwner: 'dead-worker' });
      // The lease runs out (as if the worker's process was killed long ago).
      await db.prisma.$executeRaw`UPDATE ingestion_jobs SET lease_until = now() - interval '1 second' WHERE item_id = ${id}::uuid`;
      expect(await until(() => completed(id))).toMatchObject({ status: 'COMPLETED', chunkCount: 1 });
      expect(await jobOf(id)).toMatchObject({ status: 'DONE', attempts: 2 });
      await expect(queue.advance(dead, 'dead-worker', 'EMBEDDING')).rejects.toBeInstanceOf(LeaseLostError);
      expect(await queue.complete(dead, 'dead-worker')).toBe(false);
    } finally {
      await worker.stop();
    }
  });

  it('fails a job whose worker died on each of its attempts instead of running it forever', async () => {
    const queue = new JobQueue(db.prisma, QUEUE);
    const id = await enqueue(queue, 'A file that kills every worker that opens it.');
    for (let attempt = 1; attempt <= QUEUE.maxAttempts; attempt++) {
      expect((await claimItem(queue, `doomed-${attempt}`, id)).attempts).toBe(attempt);
      await expireLease(id);
    }
    // The last attempt's lease ran out: the next claim fails the job rather than taking it.
    const next = await queue.claim('survivor');
    if (next) await queue.release(next, 'survivor');
    expect(next?.itemId).not.toBe(id);
    expect(await jobOf(id)).toMatchObject({ status: 'FAILED', attempts: QUEUE.maxAttempts, leaseOwner: null });
    expect(await item(id)).toMatchObject({ status: 'FAILED', failureReason: expect.stringMatching(/^ingestion was interrupted 3 times/) });
  });

  it('a restart (recoverAbandoned) requeues an interrupted job while attempts remain, then fails it', async () => {
    const queue = new JobQueue(db.prisma, QUEUE);
    const id = await enqueue(queue, 'A file that crashes the server that ingests it.');
    for (let attempt = 1; attempt < QUEUE.maxAttempts; attempt++) {
      await claimItem(queue, `crashed-${attempt}`, id);
      await queue.recoverAbandoned();
      expect(await jobOf(id)).toMatchObject({ status: 'QUEUED', attempts: attempt, leaseOwner: null });
      expect((await item(id)).status).toBe('QUEUED');
    }
    // An earlier attempt that failed otherwise keeps its reason in the final one.
    await db.prisma.ingestionJob.updateMany({ where: { itemId: id }, data: { error: 'embedder down' } });
    await claimItem(queue, 'crashed-last', id);
    await queue.recoverAbandoned();
    expect(await jobOf(id)).toMatchObject({ status: 'FAILED', attempts: QUEUE.maxAttempts });
    expect(await item(id)).toMatchObject({ status: 'FAILED', failureReason: 'attempt 3 was interrupted (the server stopped or lost the job); before: embedder down' });
  });

  /** New content for an existing item, as an upload with `update` stores it: the item QUEUED, its running job superseded. */
  async function reupload(queue: JobQueue, itemId: string, content: string): Promise<void> {
    const bytes = Buffer.from(content);
    const contentHash = createHash('sha256').update(bytes).digest('hex');
    await db.prisma.$transaction(async (tx) => {
      await tx.item.update({ where: { id: itemId }, data: { status: 'QUEUED', contentHash } });
      await queue.enqueue(tx, { itemId, fileName: 'new.md', mediaType: MEDIA_TYPES.md, sizeBytes: bytes.length, contentHash }, (async function* () {
        yield bytes;
      })());
    });
  }

  /** The chunk index, with `before` run ahead of each of its writes. */
  const interceptedIndex = (before: (write: 'stage' | 'publish', itemId: string) => Promise<void>): ChunkIndex => ({
    embeddingSpace: (publisherId) => chunkIndex.embeddingSpace(publisherId),
    stage: async (itemId, space, chunks, options) => (await before('stage', itemId), chunkIndex.stage(itemId, space, chunks, options)),
    publish: async (itemId, count, guard) => (await before('publish', itemId), chunkIndex.publish(itemId, count, guard)),
    replaceItemChunks: (itemId, space, chunks) => chunkIndex.replaceItemChunks(itemId, space, chunks),
  });

  for (const moment of ['stage', 'publish'] as const) {
    it(`a job superseded by a newer upload right before its ${moment} writes nothing; the newer content wins`, async () => {
      const queue = new JobQueue(db.prisma, QUEUE);
      const id = await enqueue(queue, `# Old\n\nThe first wording, replaced while it was being indexed before its ${moment}.`);
      let superseded = false;
      const index = interceptedIndex(async (write, itemId) => {
        // After the job's last lease renewal, before its write's transaction.
        if (write === moment && itemId === id && !superseded) {
          superseded = true;
          await reupload(queue, id, `# New\n\nThe second wording, uploaded before the ${moment}.`);
        }
      });
      const worker = new IngestionWorker({ queue, chunkIndex: index, embedder: testEmbedder({ calls: [] }), parser }, logger, { concurrency: 1, pollMs: 50 });
      worker.start();
      try {
        await until(async () => superseded && (await completed(id)));
        expect(await item(id)).toMatchObject({ status: 'COMPLETED', chunkCount: 1 });
        expect((await db.prisma.chunk.findMany({ where: { itemId: id } })).map((c) => c.content)).toEqual([`New\n\nThe second wording, uploaded before the ${moment}.`]);
        const jobs = await db.prisma.ingestionJob.findMany({ where: { itemId: id }, orderBy: { createdAt: 'asc' } });
        expect(jobs.map((j) => j.status)).toEqual(['SUPERSEDED', 'DONE']);
      } finally {
        await worker.stop();
      }
    });
  }

  it('indexes a long text in bounded batches, streamed from its stored parts, visible only once whole', async () => {
    const queue = new JobQueue(db.prisma, QUEUE);
    // Over two stored parts, with Windows line ends (a CR may end one part and its LF start the next).
    const sections = Array.from({ length: 600 }, (_, n) => `## Section ${n}\r\n\r\n${`Sentence ${n} of a long document that streams. `.repeat(40)}`);
    const text = `# A long document\r\n\r\n${sections.join('\r\n\r\n')}`;
    expect(Buffer.byteLength(text)).toBeGreaterThan(1024 * 1024);
    const id = await enqueue(queue, text, 'md');
    const batches: number[] = [];
    const index = interceptedIndex(async (write, itemId) => {
      if (itemId !== id) return;
      // Nothing of the item is searchable until the last write.
      expect((await item(id)).status).not.toBe('COMPLETED');
      if (write === 'stage') batches.push(batches.length);
    });
    const staged: number[] = [];
    const recording: ChunkIndex = { ...index, stage: (itemId, space, chunks, options) => (itemId === id && staged.push(chunks.length), index.stage(itemId, space, chunks, options)) };
    const worker = new IngestionWorker({ queue, chunkIndex: recording, embedder: testEmbedder({ calls: [] }), parser }, logger, { concurrency: 1, pollMs: 50 });
    worker.start();
    try {
      const done = await until(() => completed(id));
      const expected = chunkText(text.replace(/\r\n/g, '\n'), chunkOptions(512)).map((c) => c.content);
      expect(done).toMatchObject({ status: 'COMPLETED', chunkCount: expected.length, title: 'A long document' });
      expect(staged.length).toBeGreaterThan(1);
      expect(Math.max(...staged)).toBeLessThanOrEqual(STAGE_BATCH);
      expect(staged.reduce((a, b) => a + b, 0)).toBe(expected.length);
      // The same passages as chunking the whole text at once.
      expect((await db.prisma.chunk.findMany({ where: { itemId: id }, orderBy: { ordinal: 'asc' } })).map((c) => c.content)).toEqual(expected);
    } finally {
      await worker.stop();
    }
  });

  it('gives running jobs back to the queue on shutdown, for the next worker to finish', async () => {
    const queue = new JobQueue(db.prisma, QUEUE);
    const id = await enqueue(queue, 'Interrupted by a shutdown.');
    let started = false;
    const blocking = startWorker(
      queue,
      testEmbedder({
        calls: [],
        before: (_texts, signal) =>
          new Promise<void>((_resolve, reject) => {
            started = true;
            signal.addEventListener('abort', () => reject(signal.reason), { once: true });
          }),
      }),
    );
    await until(async () => started);
    await blocking.stop();
    expect(await jobOf(id)).toMatchObject({ status: 'QUEUED', leaseOwner: null, attempts: 0 });
    expect((await item(id)).status).toBe('QUEUED');
    const next = startWorker(queue, testEmbedder({ calls: [] }));
    try {
      expect(await until(() => completed(id))).toMatchObject({ status: 'COMPLETED' });
      expect(await jobOf(id)).toMatchObject({ status: 'DONE', attempts: 1 });
    } finally {
      await next.stop();
    }
  });

  it('shares one queue between two instances without doing a job twice', async () => {
    const other = await connect();
    const queues = [new JobQueue(db.prisma, QUEUE), new JobQueue(other.prisma, QUEUE)];
    const otherIndex = new PgChunkIndex(other.prisma, other.capabilities, new Collections(other.prisma, 'GlooProd', SPACE));
    const ids: string[] = [];
    for (let n = 0; n < 24; n++) ids.push(await enqueue(queues[0]!, `# Document ${n}\n\nThe passage of document number ${n}.`));
    const calls: string[][][] = [[], []];
    const slow = async () => new Promise<void>((resolve) => setTimeout(resolve, 5));
    const workers = [
      new IngestionWorker({ queue: queues[0]!, chunkIndex, embedder: testEmbedder({ calls: calls[0]!, before: slow }), parser }, logger, { concurrency: 3, pollMs: 20 }),
      new IngestionWorker({ queue: queues[1]!, chunkIndex: otherIndex, embedder: testEmbedder({ calls: calls[1]!, before: slow }), parser }, logger, { concurrency: 3, pollMs: 20 }),
    ];
    for (const worker of workers) worker.start();
    try {
      for (const id of ids) expect(await until(() => completed(id))).toMatchObject({ status: 'COMPLETED', chunkCount: 1 });
      const embedded = [...calls[0]!, ...calls[1]!].flat();
      // Every document's passage was embedded exactly once, by one instance or the other.
      expect(embedded.sort()).toEqual(ids.map((_, n) => `Document ${n}\n\nThe passage of document number ${n}.`).sort());
      const jobs = await db.prisma.ingestionJob.findMany({ where: { itemId: { in: ids } } });
      expect(jobs.map((j) => [j.status, j.attempts])).toEqual(ids.map(() => ['DONE', 1]));
      if (other !== db) expect(calls.every((c) => c.length > 0)).toBe(true);
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
  });
}
