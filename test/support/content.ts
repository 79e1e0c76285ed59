// Indexed content for the suites that search, ground or recommend: passages of a new item,
// embedded by the platform's own embedding model as ingestion embeds them, made searchable
// through the chunk index.
import { randomUUID } from 'node:crypto';
import type { Item, Prisma } from '../../generated/prisma/client.js';
import { estimateTokens } from '../../server/providers/local/tokens.js';
import type { TestPlatform } from './platform.js';

export async function indexItem(platform: TestPlatform, publisherId: string, passages: string[], data: Partial<Prisma.ItemUncheckedCreateInput> = {}): Promise<Item> {
  const { database, chunkIndex, inference } = platform.services;
  const item = await database.prisma.item.create({ data: { publisherId, fileName: `${randomUUID()}.md`, status: 'EMBEDDING', ...data } });
  const space = await chunkIndex.embeddingSpace(publisherId);
  const { result } = await inference.gateway.embed(space.model, passages, space.dimensions, { signal: AbortSignal.timeout(120_000), meter: null });
  await chunkIndex.replaceItemChunks(
    item.id,
    space,
    passages.map((content, ordinal) => ({ ordinal, content, tokenCount: estimateTokens(content), embedding: result.vectors[ordinal]! })),
  );
  return item;
}

/**
 * An item whose ingestion failed while its file is still held (a failure a retry may clear,
 * such as an upstream outage): what retryIngestion queues again without a new upload.
 */
export async function failedItemWithFile(platform: TestPlatform, publisherId: string, fileName: string, reason: string, text: string): Promise<Item> {
  const { prisma } = platform.services.database;
  const item = await prisma.item.create({ data: { publisherId, fileName, status: 'FAILED', failureReason: reason, etag: randomUUID() } });
  const job = await prisma.ingestionJob.create({ data: { itemId: item.id, status: 'FAILED', error: reason, attempts: 1, fileName, mediaType: 'text/plain' } });
  await prisma.ingestionJobPart.create({ data: { jobId: job.id, ordinal: 0, data: Buffer.from(text) } });
  return item;
}
