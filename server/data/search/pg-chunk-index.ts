// The chunk index on PostgreSQL/PGlite, its write side: passages in `chunks`, vectors in
// pgvector's untyped `embedding` column (searched through the per-size HNSW indexes of
// migration 20261202100000_search_index), and the keyword statistics BM25 reads (migration
// 20261207090000_keyword_statistics): each passage's term frequencies, and when an item is
// published, its document-level postings in `item_terms`. Reading is pg-retriever.ts.
import type { Prisma, PrismaClient } from '../../../generated/prisma/client.js';
import type { DatabaseCapabilities } from '../../storage/capabilities.js';
import { analyze, termFrequencies } from './analyzer.js';
import type { ChunkIndex, EmbeddingSpace, IndexedChunk, WriteGuard } from './chunk-index.js';
import type { Collections } from './collections.js';
import type { PlannerStatistics } from './planner-statistics.js';

/** The item status that makes an item searchable: set together with its passages. */
export const SEARCHABLE_STATUS = 'COMPLETED';

/** pgvector's text form; only finite numbers reach SQL. */
export function vectorLiteral(vector: readonly number[]): string {
  for (const x of vector) if (!Number.isFinite(x)) throw new RangeError('an embedding holds a non-finite number');
  return `[${vector.join(',')}]`;
}

/**
 * The terms a document's name is matched on: its title's and its file name's (without the
 * extension). A file name often says what the title leaves out: `c-api--weakref` is the C
 * API's page on weak references, `view-pg-stats` the pg_stats view's.
 */
export function titleTerms(title: string | null, fileName: string): string[] {
  return [...new Set([...analyze(title ?? ''), ...analyze(fileName.replace(/(\.[a-z0-9]{1,5})+$/i, ''))])];
}

export class PgChunkIndex implements ChunkIndex {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly capabilities: DatabaseCapabilities,
    private readonly collections: Collections,
    /** Told of every publish, so the planner's statistics follow the index's growth. */
    private readonly statistics?: PlannerStatistics,
  ) {}

  async embeddingSpace(publisherId: string): Promise<EmbeddingSpace> {
    const publisher = await this.prisma.publisher.findUniqueOrThrow({ where: { id: publisherId }, select: { organizationId: true } });
    return this.collections.spaceFor(publisher.organizationId);
  }

  async stage(itemId: string, space: EmbeddingSpace, chunks: IndexedChunk[], options: { first: boolean; guard?: WriteGuard }): Promise<boolean> {
    for (const chunk of chunks) {
      if (chunk.embedding.length !== space.dimensions) {
        throw new RangeError(`chunk ${chunk.ordinal} has ${chunk.embedding.length} dimensions, the space ${space.model} has ${space.dimensions}`);
      }
    }
    // Checked before the transaction: the space reads through its own connection, which on
    // PGlite (one connection) would wait for this transaction to end.
    if (options.first && !(await this.inRecordedSpace(itemId, space))) return false;
    // Analyzed before the transaction too (unless the caller did): it is CPU work that holds no lock.
    const statistics = chunks.map((c) => c.terms ?? termFrequencies(c.content));
    return this.prisma.$transaction(
      async (tx) => {
        // The item first, then the job (the order an upload superseding the job takes them in).
        // The share lock orders this write with a concurrent patch (visibility) or delete.
        const item = await lockItem(tx, itemId, 'SHARE');
        if (!item || item.deleted) return false;
        await options.guard?.(tx);
        if (options.first) await tx.$executeRaw`DELETE FROM chunks WHERE item_id = ${itemId}::uuid`;
        if (chunks.length === 0) return true;
        const withVector = this.capabilities.vector;
        await tx.$executeRawUnsafe(
          `INSERT INTO chunks (item_id, publisher_id, ordinal, content, token_count, embedding_model, visible_in_search, visible_in_chat, terms, term_count${withVector ? ', embedding' : ''})
           SELECT $1::uuid, $2::uuid, c.ordinal, c.content, c.token_count, $3, $4, $5, c.terms::jsonb, c.term_count${withVector ? ', c.embedding::vector' : ''}
             FROM unnest($6::int[], $7::text[], $8::int[], $9::text[], $10::int[]${withVector ? ', $11::text[]' : ''})
                  AS c(ordinal, content, token_count, terms, term_count${withVector ? ', embedding' : ''})`,
          itemId,
          item.publisher_id,
          space.model,
          item.visible_in_search,
          item.visible_in_chat,
          chunks.map((c) => c.ordinal),
          chunks.map((c) => c.content),
          chunks.map((c) => c.tokenCount),
          statistics.map((s) => JSON.stringify(Object.fromEntries(s.frequencies))),
          statistics.map((s) => s.length),
          ...(withVector ? [chunks.map((c) => vectorLiteral(c.embedding))] : []),
        );
        return true;
      },
      // Prisma's default 5 s can be short for a batch: every row updates the HNSW index, a few
      // ms each on PGlite. Allow time in proportion to the batch.
      { timeout: INDEX_WRITE_BASE_MS + chunks.length * INDEX_WRITE_PER_CHUNK_MS },
    );
  }

  async publish(itemId: string, count: number, guard?: WriteGuard): Promise<boolean> {
    const published = await this.prisma.$transaction(
      async (tx) => {
        const item = await lockItem(tx, itemId, 'UPDATE');
        if (!item) return false;
        await guard?.(tx);
        if (item.deleted) {
          // A deleted item stays out of retrieval: what was staged for it goes.
          await tx.$executeRaw`DELETE FROM chunks WHERE item_id = ${itemId}::uuid`;
          return false;
        }
        const [staged] = await tx.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM chunks WHERE item_id = ${itemId}::uuid`;
        if (staged?.n !== count) throw new Error(`item ${itemId}: ${staged?.n ?? 0} passages staged, ${count} expected`);
        // A visibility patch that ran before the first batch was staged had no passages to update.
        await tx.$executeRaw`
          UPDATE chunks SET visible_in_search = ${item.visible_in_search}, visible_in_chat = ${item.visible_in_chat}
           WHERE item_id = ${itemId}::uuid AND (visible_in_search <> ${item.visible_in_search} OR visible_in_chat <> ${item.visible_in_chat})`;
        await publishTerms(tx, itemId, item.publisher_id);
        await tx.$executeRaw`
          UPDATE items SET status = ${SEARCHABLE_STATUS}, chunk_count = ${count}, title_terms = ${titleTerms(item.title, item.file_name)},
                 etag = gen_random_uuid()::text, updated_at = now()
           WHERE id = ${itemId}::uuid`;
        return true;
      },
      { timeout: INDEX_WRITE_BASE_MS + count * PUBLISH_PER_CHUNK_MS },
    );
    if (published) this.statistics?.published(count);
    return published;
  }

  async replaceItemChunks(itemId: string, space: EmbeddingSpace, chunks: IndexedChunk[]): Promise<void> {
    if (await this.stage(itemId, space, chunks, { first: true })) await this.publish(itemId, chunks.length);
  }

  /** Whether the item exists, its organization's recorded space being `space` (else an error: vectors are never mixed). */
  private async inRecordedSpace(itemId: string, space: EmbeddingSpace): Promise<boolean> {
    const owner = await this.prisma.item.findUnique({ where: { id: itemId }, select: { publisher: { select: { organizationId: true } } } });
    if (!owner) return false;
    const recorded = await this.collections.spaceFor(owner.publisher.organizationId);
    if (recorded.model !== space.model || recorded.dimensions !== space.dimensions) {
      throw new Error(`item ${itemId}: passages embedded with ${space.model}/${space.dimensions}, the collection holds ${recorded.model}/${recorded.dimensions}`);
    }
    return true;
  }
}

/**
 * The item's document-level postings, summed from its passages' term frequencies, and its
 * length in terms. Any earlier postings went with its earlier passages (the delete trigger).
 */
export async function publishTerms(tx: Prisma.TransactionClient, itemId: string, publisherId: string): Promise<void> {
  await tx.$executeRaw`
    WITH t AS (SELECT e.key AS term, sum(e.value::int)::int AS tf
                 FROM chunks c CROSS JOIN LATERAL jsonb_each_text(c.terms) e
                WHERE c.item_id = ${itemId}::uuid GROUP BY e.key),
         len AS (SELECT COALESCE(sum(tf), 0)::int AS n FROM t),
         postings AS (INSERT INTO item_terms (publisher_id, term, item_id, tf, doc_terms)
                      SELECT ${publisherId}::uuid, t.term, ${itemId}::uuid, t.tf, len.n FROM t, len)
    UPDATE items SET term_count = len.n FROM len WHERE items.id = ${itemId}::uuid`;
}

interface LockedItem {
  publisher_id: string;
  visible_in_search: boolean;
  visible_in_chat: boolean;
  deleted: boolean;
  title: string | null;
  file_name: string;
}

async function lockItem(tx: Prisma.TransactionClient, itemId: string, mode: 'SHARE' | 'UPDATE'): Promise<LockedItem | undefined> {
  const rows = await tx.$queryRawUnsafe<LockedItem[]>(
    `SELECT publisher_id, visible_in_search, visible_in_chat, deleted_at IS NOT NULL AS deleted, title, file_name FROM items WHERE id = $1::uuid FOR ${mode}`,
    itemId,
  );
  return rows[0];
}

const INDEX_WRITE_BASE_MS = 10_000;
const INDEX_WRITE_PER_CHUNK_MS = 50;
/** Publishing sums each passage's terms into the document's postings: ~1 ms a passage on PGlite. */
const PUBLISH_PER_CHUNK_MS = 5;
