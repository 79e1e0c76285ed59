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
