// Accepting content for ingestion: uploaded files (ingestFiles) and single JSON documents
// (realTimeUpload). Each accepted file becomes an item and a queued job in one transaction,
// the file's bytes included, before the caller gets an answer: a 200 means the file is
// safe in the database, whichever instance then ingests it.
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Item, Prisma, PrismaClient } from '../../../generated/prisma/client.js';
import type { components } from '../../../generated/types/openapi.js';
import type { UploadedFile } from '../../../generated/server/operations.js';
import { ApiError } from '../../errors.js';
import { softDeletion } from '../items.js';
import { PUBLISHERS_HINT, type OrganizationService } from '../../identity/organizations.js';
import type { Principal } from '../../identity/principal.js';
import { checkIntact, detectFormat, MEDIA_TYPES, UnreadableDocumentError, type DocumentFormat } from './formats.js';
import type { ClaimedJob, JobQueue } from './job-queue.js';
import { ItemStatus } from './statuses.js';
import type { IngestionWorker } from './worker.js';

type Schemas = components['schemas'];
export type UploadResult = Schemas['IngestFilesResponse'];
export type RealTimeDocument = Schemas['RealTimeUploadRequest'];
export type RealTimeResult = Schemas['RealTimeUploadResponse'];

export interface UploadRequest {
  publisherId: string;
  producerId?: string;
  /** An existing item whose content the (single) upload replaces. */
  update?: string;
  files: UploadedFile[];
}

/** A file's bytes may take a while to reach the database; a transaction normally must not. */
const STORE_TIMEOUT_MS = 10 * 60_000;

interface Accepted {
  fileName: string;
  format: DocumentFormat;
  sha256: string;
  size: number;
  content: () => AsyncIterable<Uint8Array>;
}

type Stored = { item: Pick<Item, 'id'>; duplicate: boolean; job: ClaimedJob | null };

const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === 'P2002';

export class IngestionService {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly organizations: OrganizationService,
    private readonly queue: JobQueue,
    private readonly worker: IngestionWorker,
  ) {}

  async upload(principal: Principal, request: UploadRequest): Promise<UploadResult> {
    const { files } = request;
    if (files.length === 0) throw new ApiError('INVALID_REQUEST', 'Give at least one file part named "files"');
    if (request.producerId !== undefined && files.length > 1) {
      throw new ApiError('INVALID_REQUEST', `producer_id names one file, but ${files.length} were uploaded`);
    }
    if (request.update !== undefined && files.length > 1) {
      throw new ApiError('INVALID_REQUEST', `update replaces one item's content, but ${files.length} files were uploaded`);
    }
    const publisher = await this.organizations.publisherForCaller(principal, request.publisherId);
    const target = request.update === undefined ? undefined : await this.replaceable(publisher.id, request.update);
    // Every file is checked before any is stored: a batch with an unreadable file stores nothing.
    const accepted: Accepted[] = [];
    for (const file of files) {
      const format = await detectFormat(file.path, file.originalName, file.size).catch(rethrowUnreadable);
      await checkIntact(file.path, format, file.originalName, file.size).catch(rethrowUnreadable);
      accepted.push({ fileName: file.originalName, format, sha256: file.sha256, size: file.size, content: () => createReadStream(file.path, { highWaterMark: 1024 * 1024 }) });
    }
    const results: NonNullable<UploadResult['files']> = [];
    for (const file of accepted) {
      const stored = await this.store(publisher.id, file, { producerId: request.producerId, target });
      results.push({ file_name: file.fileName, item_id: stored.item.id, duplicate: stored.duplicate });
    }
    this.worker.wake();
    const ingesting = results.filter((r) => !r.duplicate).map((r) => r.item_id);
    const duplicates = results.filter((r) => r.duplicate).map((r) => r.file_name);
    return {
      success: true,
      message: `${ingesting.length} ${ingesting.length === 1 ? 'file' : 'files'} queued for ingestion, ${duplicates.length} ${duplicates.length === 1 ? 'duplicate' : 'duplicates'} skipped.`,
      ingesting,
      duplicates,
      files: results,
    };
  }

  /** One document, indexed before the answer (run by this instance, under a lease like any job). */
  async ingestText(principal: Principal, document: RealTimeDocument): Promise<RealTimeResult> {
    const publisherId = document.publisherId ?? document.publisher_id;
    if (!publisherId) throw new ApiError('INVALID_REQUEST', `publisherId (or publisher_id) is required (${PUBLISHERS_HINT})`);
    const publisher = await this.organizations.publisherForCaller(principal, publisherId);
    const bytes = Buffer.from(document.content, 'utf8');
    const title = document.item_title?.trim() || null;
    const file: Accepted = {
      fileName: document.filename ?? `${(title ?? 'document').replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-|-$/g, '').toLowerCase() || 'document'}.md`,
      format: 'md',
      sha256: createHash('sha256').update(bytes).digest('hex'),
      size: bytes.length,
      content: async function* () {
        yield bytes;
      },
    };
    const metadata: Partial<Prisma.ItemUncheckedCreateInput> = {
      title,
      subtitle: document.item_subtitle ?? null,
      author: document.author ?? [],
      publicationDate: document.publication_date ?? null,
      type: document.type ?? null,
      itemTags: document.item_tags ?? [],
      itemUrl: document.item_url ?? null,
      itemImage: document.item_image ?? null,
      itemSummary: document.item_summary ?? null,
      evergreen: document.evergreen ?? false,
      ingestionSource: 'real_time_upload',
    };
    const stored = await this.store(publisher.id, file, { producerId: document.producer_id, metadata, owner: this.worker.owner });
    if (stored.duplicate || !stored.job) {
      const item = await this.prisma.item.findUniqueOrThrow({ where: { id: stored.item.id } });
      return { success: true, message: 'The same content is already in this publisher.', item_id: item.id, status: item.status, chunk_count: item.chunkCount, duplicate: true };
    }
    const outcome = await this.worker.run(stored.job).catch(async (error: unknown) => {
      // The caller is told nothing was ingested: the failed item must not linger, holding the
      // content hash or producer_id that a corrected document will need.
      if (error instanceof UnreadableDocumentError) await this.discard(stored.item.id);
      return rethrowUnreadable(error);
    });
    return {
      success: true,
      message: `${title ?? file.fileName} indexed in ${outcome.chunkCount} ${outcome.chunkCount === 1 ? 'passage' : 'passages'}.`,
      item_id: stored.item.id,
      status: ItemStatus.COMPLETED,
      chunk_count: outcome.chunkCount,
      duplicate: false,
    };
  }

  /** The live item of the publisher an `update` names: 404 when unknown, 403 when another publisher's. */
  private async replaceable(publisherId: string, itemId: string): Promise<Item> {
    const item = await this.prisma.item.findFirst({ where: { id: itemId, deletedAt: null } });
    if (!item) throw new ApiError('NOT_FOUND', `Item ${itemId} not found`);
    if (item.publisherId !== publisherId) throw new ApiError('FORBIDDEN', `Item ${itemId} does not belong to publisher ${publisherId}`);
    return item;
  }

  /**
   * The file as a new item (or the target's new content) with its queued job, or the item
   * that already holds the same bytes in this publisher (a duplicate).
   */
  private async store(
    publisherId: string,
    file: Accepted,
    options: { producerId?: string; target?: Item; metadata?: Partial<Prisma.ItemUncheckedCreateInput>; owner?: string },
  ): Promise<Stored> {
    const existing = await this.holderOf(publisherId, file.sha256);
    if (existing) return { item: existing, duplicate: true, job: null };
    if (options.producerId !== undefined) await this.checkProducerFree(publisherId, options.producerId);
    const job = { fileName: file.fileName, mediaType: MEDIA_TYPES[file.format], sizeBytes: file.size, contentHash: file.sha256 };
    try {
      return await this.prisma.$transaction(
        async (tx) => {
          // A FAILED item holds no content: the same bytes may be uploaded again (its failure may have passed).
          await tx.item.updateMany({ where: { publisherId, contentHash: file.sha256, status: ItemStatus.FAILED }, data: { contentHash: null } });
          const fields = { fileName: file.fileName, contentHash: file.sha256, status: ItemStatus.QUEUED, failureReason: null };
          const item = options.target
            ? await tx.item.update({ where: { id: options.target.id }, data: { ...fields, etag: randomUUID(), updatedAt: new Date() }, select: { id: true } })
            : await tx.item.create({
                data: { publisherId, producerId: options.producerId ?? null, ingestionSource: 'upload', ...options.metadata, ...fields },
                select: { id: true },
              });
          const claimed = await this.queue.enqueue(tx, { itemId: item.id, ...job }, file.content(), options.owner);
          return { item, duplicate: false, job: claimed };
        },
        { timeout: STORE_TIMEOUT_MS, maxWait: STORE_TIMEOUT_MS },
      );
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      // A concurrent upload of the same bytes won the race: this one is its duplicate.
      const holder = await this.holderOf(publisherId, file.sha256);
      if (holder) return { item: holder, duplicate: true, job: null };
      throw producerTaken(options.producerId);
    }
  }

  /** The live item that holds these bytes; a FAILED one does not (see `store`). */
  private holderOf(publisherId: string, sha256: string): Promise<Pick<Item, 'id'> | null> {
    return this.prisma.item.findFirst({ where: { publisherId, contentHash: sha256, deletedAt: null, status: { not: ItemStatus.FAILED } }, select: { id: true } });
  }

  /** Soft-deletes an item nobody was told about. */
  private async discard(itemId: string): Promise<void> {
    await this.prisma.item.update({ where: { id: itemId }, data: softDeletion() });
  }

  private async checkProducerFree(publisherId: string, producerId: string): Promise<void> {
    const taken = await this.prisma.item.findFirst({ where: { publisherId, producerId, deletedAt: null }, select: { id: true } });
    if (taken) throw producerTaken(producerId, taken.id);
  }
}

function producerTaken(producerId: string | undefined, itemId?: string): ApiError {
  const which = itemId ? ` (item ${itemId}; pass update=${itemId} to replace its content)` : '';
  // 400, not 409: spec 7.1 lists no 409 for ingestion (a structurally invalid request).
  return new ApiError('INVALID_REQUEST', `producer_id ${producerId} is already used in this publisher${which}`);
}

/** An unreadable file is the caller's 400, naming the file. */
function rethrowUnreadable(error: unknown): never {
  if (error instanceof UnreadableDocumentError) throw new ApiError('INVALID_REQUEST', error.message, { cause: error });
  throw error;
}
