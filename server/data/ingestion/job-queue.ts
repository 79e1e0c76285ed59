// The ingestion queue, kept in the database so every instance sharing it shares the work.
//
// A job holds its file (ingestion_job_parts, written in the transaction that creates the
// item, before the upload is answered). A worker claims the oldest due job with
// `FOR UPDATE SKIP LOCKED` (concurrent claimers skip each other's rows instead of waiting or
// taking the same one) and holds it under a lease it renews at every step; a job whose lease
// ran out (its worker died or hung) is claimable again, and every write of a worker checks it
// still holds the lease, so a worker that lost its job stops instead of racing the new owner.
// All times are the database's `now()`, the one clock every instance shares. On PGlite (one
// process, one connection) the same statements are trivially serialized, so equally correct.
import { Prisma, type PrismaClient } from '../../../generated/prisma/client.js';
import type { WriteGuard } from '../search/chunk-index.js';
import { LIMIT_EXCEEDED } from './limits.js';
import { ItemStatus, JobStatus } from './statuses.js';

/** How long a failed job keeps its file for a retry without a new upload (failures.ts). */
export const FAILED_FILE_DAYS = 7;

type Transaction = Prisma.TransactionClient;

/** Parts of a stored file: small enough to stream through the driver, large enough to be few. */
export const PART_BYTES = 1024 * 1024;

export interface NewJob {
  itemId: string;
  fileName: string;
  mediaType: string;
  sizeBytes: number;
  contentHash: string;
}

export interface ClaimedJob {
  id: string;
  itemId: string;
  publisherId: string;
  attempts: number;
  fileName: string;
  mediaType: string | null;
}

export interface QueueOptions {
  leaseMs: number;
  maxAttempts: number;
  retryBaseMs: number;
}

/** The worker no longer holds the job (its lease ran out and another took it, or it was superseded). */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

/** The item was deleted while its job ran: nothing left to index. */
export class ItemGoneError extends Error {
  override readonly name = 'ItemGoneError';
}

interface ClaimRow {
  id: string;
  item_id: string;
  publisher_id: string;
  attempts: number;
  file_name: string;
  media_type: string | null;
}

const toJob = (row: ClaimRow): ClaimedJob => ({
  id: row.id,
  itemId: row.item_id,
  publisherId: row.publisher_id,
  attempts: row.attempts,
  fileName: row.file_name,
  mediaType: row.media_type,
});

export class JobQueue {
  constructor(
    private readonly prisma: PrismaClient,
    readonly options: QueueOptions,
  ) {}

  /**
   * Inside the caller's transaction: the job and its file, streamed in parts. With `owner`
   * the job starts claimed by it (an upload processed at once by the instance that took it).
   */
  async enqueue(tx: Transaction, job: NewJob, content: AsyncIterable<Uint8Array>, owner?: string): Promise<ClaimedJob> {
    // Any older job of the item is replaced by this upload; its worker notices at its next step.
    await tx.ingestionJob.updateMany({
      where: { itemId: job.itemId, status: { in: [JobStatus.QUEUED, JobStatus.RUNNING] } },
      data: { status: JobStatus.SUPERSEDED, leaseOwner: null, leaseUntil: null },
    });
    await tx.ingestionJobPart.deleteMany({ where: { job: { itemId: job.itemId, status: JobStatus.SUPERSEDED } } });
    const created = await tx.ingestionJob.create({
      data: {
        itemId: job.itemId,
        fileName: job.fileName,
        mediaType: job.mediaType,
        sizeBytes: BigInt(job.sizeBytes),
        contentHash: job.contentHash,
        ...(owner && { status: JobStatus.RUNNING, leaseOwner: owner, attempts: 1 }),
      },
      select: { id: true, attempts: true, item: { select: { publisherId: true } } },
    });
    let ordinal = 0;
    for await (const part of parts(content)) {
      // As base64 text decoded by the database: PGlite binds a bytea parameter byte by byte in
      // JavaScript, about 20 times slower (3 MB/s against 50 MB/s measured).
      await tx.$executeRaw`INSERT INTO ingestion_job_parts (job_id, ordinal, data) VALUES (${created.id}::uuid, ${ordinal++}, decode(${part.toString('base64')}, 'base64'))`;
    }
    if (owner) {
      await tx.$executeRaw`UPDATE ingestion_jobs SET lease_until = now() + ${this.options.leaseMs}::int * interval '1 millisecond' WHERE id = ${created.id}::uuid`;
    }
    return { id: created.id, itemId: job.itemId, publisherId: created.item.publisherId, attempts: created.attempts, fileName: job.fileName, mediaType: job.mediaType };
  }

  /**
   * The oldest due job, or one whose worker's lease ran out, now leased to `owner`; null when
   * none. A job whose lease ran out on its last allowed attempt is not run again: its worker
   * died (or hung) every time, which a file that crashes the server does, so it ends FAILED.
   */
  async claim(owner: string): Promise<ClaimedJob | null> {
    await this.failInterrupted(Prisma.sql`status = ${JobStatus.RUNNING} AND lease_until < now()`);
    const rows = await this.prisma.$queryRaw<ClaimRow[]>`
      UPDATE ingestion_jobs j
         SET status = ${JobStatus.RUNNING}, lease_owner = ${owner}, attempts = j.attempts + 1,
             lease_until = now() + ${this.options.leaseMs}::int * interval '1 millisecond', updated_at = now()
        FROM items i
       WHERE i.id = j.item_id
         AND j.id = (SELECT id FROM ingestion_jobs
                      WHERE (status = ${JobStatus.QUEUED} AND run_after <= now())
                         OR (status = ${JobStatus.RUNNING} AND lease_until < now() AND attempts < ${this.options.maxAttempts})
                      ORDER BY run_after, created_at
                      LIMIT 1
                      FOR UPDATE SKIP LOCKED)
      RETURNING j.id, j.item_id, i.publisher_id, j.attempts, j.file_name, j.media_type`;
    return rows[0] ? toJob(rows[0]) : null;
  }

  /** Running jobs matching `running` that used their last attempt: FAILED, their items too, with the reason. */
  private async failInterrupted(running: Prisma.Sql): Promise<void> {
    // The reason keeps an earlier attempt's recorded failure, if one failed otherwise.
    await this.prisma.$queryRaw`
      WITH job AS (
        UPDATE ingestion_jobs
           SET status = ${JobStatus.FAILED}, lease_owner = NULL, lease_until = NULL, updated_at = now(),
               error = CASE WHEN error IS NULL
                            THEN 'ingestion was interrupted ' || attempts || ' times (the server stopped or lost the job while processing this file)'
                            ELSE 'attempt ' || attempts || ' was interrupted (the server stopped or lost the job); before: ' || error END
         WHERE ${running} AND attempts >= ${this.options.maxAttempts}
        RETURNING item_id, error)
      UPDATE items SET status = ${ItemStatus.FAILED}, failure_reason = job.error, etag = gen_random_uuid()::text, updated_at = now()
        FROM job
       WHERE items.id = job.item_id AND items.deleted_at IS NULL
      RETURNING items.id`;
    await this.removeFinishedFiles();
  }

  /**
   * Removes the stored files of jobs that will not run again: done and superseded ones, and
   * failed ones past a limit (a retry would fail the same way) or failed FAILED_FILE_DAYS ago;
   * a failed job keeps its file until then so that an operator can retry it without a new
   * upload (failures.ts). Run as jobs end and at start, so that the file of a job whose worker
   * died goes too.
   */
  async removeFinishedFiles(): Promise<number> {
    return this.prisma.$executeRaw`
      DELETE FROM ingestion_job_parts p USING ingestion_jobs j
       WHERE p.job_id = j.id
         AND (j.status IN (${JobStatus.DONE}, ${JobStatus.SUPERSEDED})
              OR (j.status = ${JobStatus.FAILED}
                  AND (j.error LIKE ${`${LIMIT_EXCEEDED}%`} OR j.updated_at < now() - ${FAILED_FILE_DAYS}::int * interval '1 day')))`;
  }

  /** Extends the lease; false when the job is no longer this owner's. */
  async renew(job: ClaimedJob, owner: string): Promise<boolean> {
    const count = await this.prisma.$executeRaw`
      UPDATE ingestion_jobs SET lease_until = now() + ${this.options.leaseMs}::int * interval '1 millisecond', updated_at = now()
       WHERE id = ${job.id}::uuid AND lease_owner = ${owner} AND status = ${JobStatus.RUNNING}`;
    return count === 1;
  }

  /** Renews the lease and moves the item to `status`, in one statement. */
  async advance(job: ClaimedJob, owner: string, status: ItemStatus, extra: { title?: string | null } = {}): Promise<void> {
    const [row] = await this.prisma.$queryRaw<{ held: number; live: number }[]>`
      WITH job AS (
        UPDATE ingestion_jobs SET lease_until = now() + ${this.options.leaseMs}::int * interval '1 millisecond', updated_at = now()
         WHERE id = ${job.id}::uuid AND lease_owner = ${owner} AND status = ${JobStatus.RUNNING}
        RETURNING item_id),
      item AS (
        UPDATE items SET status = ${status}, title = COALESCE(title, ${extra.title ?? null}::text), failure_reason = NULL,
                         etag = gen_random_uuid()::text, updated_at = now()
         WHERE id IN (SELECT item_id FROM job) AND deleted_at IS NULL
        RETURNING id)
      SELECT (SELECT count(*) FROM job)::int AS held, (SELECT count(*) FROM item)::int AS live`;
    if (!row || row.held === 0) throw new LeaseLostError(`job ${job.id} is no longer held by ${owner}`);
    if (row.live === 0) throw new ItemGoneError(`item ${job.itemId} was deleted`);
  }

  /**
   * The passage count when the job's item is already indexed, else null. An upload sets its
   * item QUEUED in the transaction that queues the job, and only storing the passages makes
   * it COMPLETED, so a job that finds its item COMPLETED was finished by a worker that died
   * before closing it: there is nothing to redo.
   */
  async indexedChunkCount(job: ClaimedJob): Promise<number | null> {
    const item = await this.prisma.item.findUnique({ where: { id: job.itemId }, select: { status: true, chunkCount: true } });
    return item?.status === ItemStatus.COMPLETED ? item.chunkCount : null;
  }

  /** The job's file, a part at a time (one part in memory). */
  async *fileParts(job: ClaimedJob): AsyncGenerator<Buffer> {
    for (let ordinal = 0; ; ordinal++) {
      // Base64 for the same reason as in `enqueue` (Buffer.from skips the line breaks encode adds).
      const [row] = await this.prisma.$queryRaw<{ data: string }[]>`
        SELECT encode(data, 'base64') AS data FROM ingestion_job_parts WHERE job_id = ${job.id}::uuid AND ordinal = ${ordinal}`;
      if (!row) return;
      yield Buffer.from(row.data, 'base64');
    }
  }

  /** The job's file, whole (for the parsers that need it in one piece). */
  async readFile(job: ClaimedJob): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const part of this.fileParts(job)) parts.push(part);
    return Buffer.concat(parts);
  }

  /**
   * The chunk index's check that `owner` still holds the job, run inside each write's
   * transaction: the job's row stays share-locked until the write commits, so neither a
   * takeover nor a superseding upload can slip in between the check and the write.
   */
  writeGuard(job: ClaimedJob, owner: string): WriteGuard {
    return async (tx) => {
      const held = await tx.$queryRaw<{ id: string }[]>`
        SELECT id FROM ingestion_jobs WHERE id = ${job.id}::uuid AND lease_owner = ${owner} AND status = ${JobStatus.RUNNING} FOR SHARE`;
      if (held.length === 0) throw new LeaseLostError(`job ${job.id} is no longer held by ${owner}`);
    };
  }

  /** Done: the file is no longer needed. False when the job was no longer this owner's. */
  async complete(job: ClaimedJob, owner: string): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      const count = await tx.$executeRaw`
        UPDATE ingestion_jobs SET status = ${JobStatus.DONE}, lease_owner = NULL, lease_until = NULL, error = NULL, updated_at = now()
         WHERE id = ${job.id}::uuid AND lease_owner = ${owner} AND status = ${JobStatus.RUNNING}`;
      if (count === 1) await tx.ingestionJobPart.deleteMany({ where: { jobId: job.id } });
      return count === 1;
    });
  }

  /**
   * A failed attempt: retried later (exponential backoff with jitter) while attempts remain
   * and the failure may pass, else the job and its item are FAILED with the reason.
   */
  async fail(job: ClaimedJob, owner: string, reason: string, retryable: boolean): Promise<'retrying' | 'failed'> {
    const retry = retryable && job.attempts < this.options.maxAttempts;
    const delayMs = Math.round(this.options.retryBaseMs * 2 ** (job.attempts - 1) * (0.5 + Math.random() / 2));
    const status = retry ? JobStatus.QUEUED : JobStatus.FAILED;
    const itemStatus = retry ? ItemStatus.QUEUED : ItemStatus.FAILED;
    await this.prisma.$queryRaw`
      WITH job AS (
        UPDATE ingestion_jobs SET status = ${status}, error = ${reason}, lease_owner = NULL, lease_until = NULL,
                                  run_after = now() + ${delayMs}::int * interval '1 millisecond', updated_at = now()
         WHERE id = ${job.id}::uuid AND lease_owner = ${owner} AND status = ${JobStatus.RUNNING}
        RETURNING item_id)
      UPDATE items SET status = ${itemStatus}, failure_reason = ${retry ? null : reason}::text, etag = gen_random_uuid()::text, updated_at = now()
       WHERE id IN (SELECT item_id FROM job) AND deleted_at IS NULL
      RETURNING id`;
    if (!retry) await this.removeFinishedFiles();
    return retry ? 'retrying' : 'failed';
  }

  /** Gives a job back untouched (shutdown): due at once, and this attempt does not count. */
  async release(job: ClaimedJob, owner: string): Promise<void> {
    await this.prisma.$queryRaw`
      WITH job AS (
        UPDATE ingestion_jobs SET status = ${JobStatus.QUEUED}, lease_owner = NULL, lease_until = NULL, run_after = now(),
                                  attempts = GREATEST(attempts - 1, 0), updated_at = now()
         WHERE id = ${job.id}::uuid AND lease_owner = ${owner} AND status = ${JobStatus.RUNNING}
        RETURNING item_id)
      UPDATE items SET status = ${ItemStatus.QUEUED}, etag = gen_random_uuid()::text, updated_at = now()
       WHERE id IN (SELECT item_id FROM job) AND deleted_at IS NULL
      RETURNING id`;
  }

  /**
   * Every running job back to the queue, at once. Only for a database this process owns alone
   * (PGlite): whoever held those leases is dead. An interrupted attempt still counts, so a
   * file that crashes the server every time ends FAILED instead of crashing it forever.
   */
  async recoverAbandoned(): Promise<number> {
    await this.failInterrupted(Prisma.sql`status = ${JobStatus.RUNNING}`);
    const rows = await this.prisma.$queryRaw<{ id: string }[]>`
      WITH job AS (
        UPDATE ingestion_jobs SET status = ${JobStatus.QUEUED}, lease_owner = NULL, lease_until = NULL, run_after = now(), updated_at = now()
         WHERE status = ${JobStatus.RUNNING}
        RETURNING item_id)
      UPDATE items SET status = ${ItemStatus.QUEUED}, etag = gen_random_uuid()::text, updated_at = now()
       WHERE id IN (SELECT item_id FROM job) AND deleted_at IS NULL
      RETURNING id`;
    return rows.length;
  }

  /** Ends a job whose item was deleted meanwhile. */
  async drop(job: ClaimedJob, owner: string): Promise<void> {
    await this.prisma.$transaction([
      this.prisma.$executeRaw`
        UPDATE ingestion_jobs SET status = ${JobStatus.DONE}, error = 'item deleted', lease_owner = NULL, lease_until = NULL, updated_at = now()
         WHERE id = ${job.id}::uuid AND lease_owner = ${owner}`,
      this.prisma.ingestionJobPart.deleteMany({ where: { jobId: job.id } }),
    ]);
  }
}

/** Re-cuts a byte stream into parts of at most PART_BYTES. */
async function* parts(content: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let size = 0;
  for await (const piece of content) {
    let rest = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    while (size + rest.length >= PART_BYTES) {
      const take = PART_BYTES - size;
      yield Buffer.concat([...pending, rest.subarray(0, take)]);
      pending = [];
      size = 0;
      rest = rest.subarray(take);
    }
    if (rest.length > 0) {
      pending.push(Buffer.from(rest));
      size += rest.length;
    }
  }
  if (size > 0) yield Buffer.concat(pending);
}
