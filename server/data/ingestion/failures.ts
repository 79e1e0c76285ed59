// Ingestion's failures as an operator sees them (GET /api/v1/ingestion/failures, the console's
// ingestion page): the organization's FAILED items with their reasons, and a retry that
// queues a failed item's held file again. A failed job keeps its file (only a completed or
// dropped one lets it go), so a retry needs no new upload while the item is FAILED.
import { Prisma, type PrismaClient } from '../../../generated/prisma/client.js';
import { ApiError } from '../../errors.js';
import { decodeCursor, encodeCursor, type Page, type PageRequest } from '../../storage/pagination.js';
import { ItemStatus, JobStatus } from './statuses.js';

export interface IngestionFailure {
  itemId: string;
  publisherId: string;
  publisherName: string;
  fileName: string;
  reason: string | null;
  attempts: number;
  failedAt: Date;
  /** Whether its file is still held, so that a retry can run. */
  retryable: boolean;
}

interface FailureRow {
  id: string;
  publisher_id: string;
  publisher_name: string;
  file_name: string;
  failure_reason: string | null;
  created_at: Date;
  updated_at: Date;
  attempts: number | null;
  held: boolean;
}

export class IngestionFailures {
  constructor(
    private readonly prisma: PrismaClient,
    /** Tells idle ingestion workers that a job is due. */
    private readonly wake: () => void,
  ) {}

  /** FAILED items of the organization (of one publisher), newest uploads first. */
  async list(organizationId: string, publisherId: string | undefined, page: PageRequest): Promise<Page<IngestionFailure>> {
    const conditions = [
      Prisma.sql`p.organization_id = ${organizationId}::uuid`,
      Prisma.sql`i.status = ${ItemStatus.FAILED}`,
      Prisma.sql`i.deleted_at IS NULL`,
    ];
    if (publisherId) conditions.push(Prisma.sql`i.publisher_id = ${publisherId}::uuid`);
    if (page.cursor) {
      const after = decodeCursor(page.cursor);
      conditions.push(Prisma.sql`(i.created_at, i.id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)`);
    }
    const rows = await this.prisma.$queryRaw<FailureRow[]>`
      SELECT i.id, i.publisher_id, p.name AS publisher_name, i.file_name, i.failure_reason, i.created_at, i.updated_at,
             j.attempts, COALESCE(j.held, false) AS held
      FROM items i JOIN publishers p ON p.id = i.publisher_id
      LEFT JOIN LATERAL (
        SELECT job.attempts, job.status = ${JobStatus.FAILED} AND EXISTS (SELECT 1 FROM ingestion_job_parts part WHERE part.job_id = job.id) AS held
        FROM ingestion_jobs job WHERE job.item_id = i.id ORDER BY job.created_at DESC LIMIT 1) j ON true
      WHERE ${Prisma.join(conditions, ' AND ')}
      ORDER BY i.created_at DESC, i.id DESC LIMIT ${page.limit + 1}`;
    const items = rows.slice(0, page.limit);
    const hasMore = rows.length > page.limit;
    return {
      items: items.map((r) => ({
        itemId: r.id,
        publisherId: r.publisher_id,
        publisherName: r.publisher_name,
        fileName: r.file_name,
        reason: r.failure_reason,
        attempts: r.attempts ?? 0,
        failedAt: r.updated_at,
        retryable: r.held,
      })),
      hasMore,
      nextCursor: hasMore ? encodeCursor({ createdAt: items[items.length - 1].created_at, id: items[items.length - 1].id }) : null,
    };
  }

  /** Queues a FAILED item's held file again, with a fresh count of attempts. */
  async retry(organizationId: string, itemId: string): Promise<{ itemId: string; status: string }> {
    const item = await this.prisma.item.findFirst({
      where: { id: itemId, deletedAt: null, publisher: { organizationId } },
      select: { id: true, status: true, ingestionJobs: { orderBy: { createdAt: 'desc' }, take: 1, select: { id: true, status: true } } },
    });
    if (!item) throw new ApiError('NOT_FOUND', `Item ${itemId} not found`);
    if (item.status !== ItemStatus.FAILED) throw new ApiError('CONFLICT', `Item ${itemId} is ${item.status}, not FAILED: only a failed item is queued again`);
    const job = item.ingestionJobs[0];
    const queued = await this.prisma.$transaction(async (tx) => {
      if (!job || job.status !== JobStatus.FAILED) return 0;
      const [held] = await tx.$queryRaw<{ held: boolean }[]>`SELECT EXISTS (SELECT 1 FROM ingestion_job_parts WHERE job_id = ${job.id}::uuid) AS held`;
      if (!held?.held) return 0;
      const jobs = await tx.$executeRaw`
        UPDATE ingestion_jobs SET status = ${JobStatus.QUEUED}, attempts = 0, error = NULL, run_after = now(), updated_at = now()
         WHERE id = ${job.id}::uuid AND status = ${JobStatus.FAILED}`;
      if (jobs === 0) return 0;
      await tx.$executeRaw`
        UPDATE items SET status = ${ItemStatus.QUEUED}, failure_reason = NULL, etag = gen_random_uuid()::text, updated_at = now()
         WHERE id = ${item.id}::uuid AND status = ${ItemStatus.FAILED}`;
      return jobs;
    });
    if (queued === 0) throw new ApiError('CONFLICT', `Item ${itemId}'s file is no longer held: upload it again`);
    this.wake();
    return { itemId: item.id, status: ItemStatus.QUEUED };
  }
}
