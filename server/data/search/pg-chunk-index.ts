// The chunk index on PostgreSQL/PGlite: passages in `chunks`, vectors in pgvector's
// untyped `embedding` column (searched through the per-size HNSW indexes of migration
// 20261202100000_search_index), words in the generated `content_tsv` (GIN index).
//
// Hybrid ranking: the nearest `candidates` passages by cosine distance and the best
// `candidates` by full text (passages holding at least half the query's stemmed words,
// ranked by that share, then ts_rank_cd) are fused with reciprocal rank fusion,
// score = Σ 1 / (RRF_K + rank) over the lists a passage appears in (Cormack et al. 2009).
// RRF needs no score calibration between cosine and ts_rank, which are not comparable.
// Every hit, whichever list found it, must then reach the caller's `certainty`,
// (1 + cosine) / 2 as Weaviate defines it: full-text can promote a passage, never admit one
// that is semantically too far.
import type { Prisma, PrismaClient } from '../../../generated/prisma/client.js';
import { ApiError } from '../../errors.js';
import type { CallScope } from '../../gateway/gateway-service.js';
import type { DatabaseCapabilities } from '../../storage/capabilities.js';
import type { ChunkIndex, EmbeddingSpace, IndexedChunk, Passage, RetrievalQuery, Retriever, WriteGuard } from './chunk-index.js';
import type { Collections } from './collections.js';

/** The item status that makes an item searchable: set together with its passages. */
export const SEARCHABLE_STATUS = 'COMPLETED';

/** RRF's constant: 60 is the value of the original paper and of most engines since. */
export const RRF_K = 60;

/**
 * The share of the query's words a passage must contain to enter the full-text list (like a
 * search engine's "minimum should match"). With plain OR a paraphrase matches many passages
 * on one common word, and fusing that noise pulls good vector hits down (measured on the
 * labelled set, scripts/eval-retrieval.ts: hybrid nDCG@10 0.855 with OR, 0.924 with this).
 */
export const MIN_TEXT_COVERAGE = 0.5;

/** Up to this many query words, minimum should match is built into the tsquery (at most C(10, 5) = 252 AND groups). */
const MAX_COMBINED_WORDS = 10;

/** The best passages by ts_rank_cd whose word coverage is then counted (bounds the work per query). */
const TEXT_POOL = 500;

/** Embeds one query in the given space (the gateway's embedding call in production). */
export type QueryEmbedder = (space: EmbeddingSpace, text: string, scope?: CallScope) => Promise<number[]>;

const VISIBILITY_COLUMN = { search: 'visible_in_search', chat: 'visible_in_chat' } as const;

/** pgvector's text form; only finite numbers reach SQL. */
export function vectorLiteral(vector: readonly number[]): string {
  for (const x of vector) if (!Number.isFinite(x)) throw new RangeError('an embedding holds a non-finite number');
  return `[${vector.join(',')}]`;
}

export class PgChunkIndex implements ChunkIndex {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly capabilities: DatabaseCapabilities,
    private readonly collections: Collections,
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
          `INSERT INTO chunks (item_id, publisher_id, ordinal, content, token_count, embedding_model, visible_in_search, visible_in_chat${withVector ? ', embedding' : ''})
           SELECT $1::uuid, $2::uuid, c.ordinal, c.content, c.token_count, $3, $4, $5${withVector ? ', c.embedding::vector' : ''}
             FROM unnest($6::int[], $7::text[], $8::int[]${withVector ? ', $9::text[]' : ''}) AS c(ordinal, content, token_count${withVector ? ', embedding' : ''})`,
          itemId,
          item.publisher_id,
          space.model,
          item.visible_in_search,
          item.visible_in_chat,
          chunks.map((c) => c.ordinal),
          chunks.map((c) => c.content),
          chunks.map((c) => c.tokenCount),
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
    return this.prisma.$transaction(async (tx) => {
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
      await tx.$executeRaw`
        UPDATE items SET status = ${SEARCHABLE_STATUS}, chunk_count = ${count}, etag = gen_random_uuid()::text, updated_at = now()
         WHERE id = ${itemId}::uuid`;
      return true;
    });
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

interface LockedItem {
  publisher_id: string;
  visible_in_search: boolean;
  visible_in_chat: boolean;
  deleted: boolean;
}

async function lockItem(tx: Prisma.TransactionClient, itemId: string, mode: 'SHARE' | 'UPDATE'): Promise<LockedItem | undefined> {
  const rows = await tx.$queryRawUnsafe<LockedItem[]>(
    `SELECT publisher_id, visible_in_search, visible_in_chat, deleted_at IS NOT NULL AS deleted FROM items WHERE id = $1::uuid FOR ${mode}`,
    itemId,
  );
  return rows[0];
}

const INDEX_WRITE_BASE_MS = 10_000;
const INDEX_WRITE_PER_CHUNK_MS = 50;

interface PassageRow {
  chunk_id: string;
  item_id: string;
  publisher_id: string;
  publisher_name: string;
  item_title: string | null;
  ordinal: number;
  content: string;
  distance: number;
  score: number;
  subtitle: string | null;
  type: string | null;
  author: string[] | null;
  publication_date: string | null;
  item_url: string | null;
  item_image: string | null;
  item_summary: string | null;
}

export interface PgRetrieverOptions {
  /** How many passages each ranking contributes before fusion (and HNSW's ef_search). */
  candidates?: number;
}

export class PgRetriever implements Retriever {
  readonly available: boolean;
  private readonly candidates: number;

  constructor(
    private readonly prisma: PrismaClient,
    capabilities: DatabaseCapabilities,
    private readonly collections: Collections,
    private readonly embedQuery: QueryEmbedder,
    options: PgRetrieverOptions = {},
  ) {
    this.available = capabilities.vector;
    this.candidates = options.candidates ?? 100;
  }

  async retrieve(query: RetrievalQuery, scope?: CallScope): Promise<Passage[]> {
    if (!this.available) {
      throw new ApiError('SERVICE_UNAVAILABLE', 'Semantic search needs pgvector, which this database lacks.');
    }
    if (query.publisherIds.length === 0 || query.limit < 1) return [];
    const space = await this.collections.recordedSpace(query.organizationId);
    // Nothing was ever indexed for this organization: nothing to find, no query to embed.
    if (!space) return [];
    const vector = await this.embedQuery(space, query.query, scope);
    scope?.signal.throwIfAborted();
    const candidates = Math.max(this.candidates, query.limit);
    const { sql, params } = hybridQuery(space, query, vectorLiteral(vector), candidates);
    const rows = await this.prisma.$queryRawUnsafe<PassageRow[]>(sql, ...params);
    return rows.map(toPassage);
  }
}

/**
 * The one SQL statement of a retrieval. The vector size is spelled into the SQL (a checked
 * integer) because the HNSW index of that size is an expression index on `embedding::vector(N)`
 * with `vector_dims(embedding) = N` as its predicate: the query must say the same to use it.
 */
export function hybridQuery(space: EmbeddingSpace, query: RetrievalQuery, vector: string, candidates: number): { sql: string; params: unknown[] } {
  const d = space.dimensions;
  if (!Number.isInteger(d) || d < 1) throw new RangeError(`invalid vector size ${d}`);
  const visible = VISIBILITY_COLUMN[query.purpose];
  const mode = query.mode ?? 'hybrid';
  const near = `(c.embedding::vector(${d})) <=> $1::vector(${d})`;
  // Both lists are always declared (an unused one is not run) so every parameter has a type.
  // Passages staged for an item still being indexed are filtered out here, as candidates, so
  // they never take the place of searchable ones in either list. A scalar subquery rather than
  // EXISTS: the planner turns EXISTS into a join, and the HNSW scan then reads every row
  // instead of stopping at the LIMIT (measured: 10k rows read for 100 candidates).
  const mine = `c.publisher_id = ANY($3::uuid[]) AND c.${visible} AND c.embedding_model = $4
    AND (SELECT it.status = '${SEARCHABLE_STATUS}' AND ($9::text[] IS NULL OR lower(it.type) = ANY($9::text[])) FROM items it WHERE it.id = c.item_id)`;
  // The HNSW scan's settings are made by the statement itself, local to its transaction (one
  // round trip, where SET LOCAL needed a transaction of three statements: ~1 ms of a
  // retrieval). The condition on them is constant, so it gates the scan and is evaluated
  // before the scan begins, which is when pgvector reads them. Filtered HNSW scans keep going
  // until enough rows pass the filter (pgvector 0.8); ef_search is the candidate count.
  const settings = `(SELECT set_config('hnsw.ef_search', least($5::int, 1000)::text, true)
    || set_config('hnsw.iterative_scan', 'relaxed_order', true)) IS NOT NULL`;
  const vectorList = `
    vec AS (
      SELECT id, distance, row_number() OVER (ORDER BY distance) AS r FROM (
        SELECT c.id, ${near} AS distance FROM chunks c
         WHERE ${settings} AND ${mine} AND vector_dims(c.embedding) = ${d}
         ORDER BY ${near} LIMIT $5) v)`;
  // The query's own stemmed words (quote_literal keeps any tsquery syntax inert). Minimum
  // should match goes into the tsquery itself, so the GIN index finds only passages holding
  // enough of them: every combination of `need` words AND-ed, the combinations OR-ed. Plain OR
  // made the database read and rank every passage holding any one word (a quarter of the
  // bench's corpus). Past MAX_COMBINED_WORDS words the combinations grow too many: plain OR,
  // and the coverage count below filters. The tsquery is built once (MATERIALIZED: inlined
  // into the scan, it was rebuilt for every passage ranked, 80 ms at 100k).
  const textList = `
    terms AS (
      SELECT ws, COALESCE(cardinality(ws), 0) AS n, ceil(COALESCE(cardinality(ws), 0) * ${MIN_TEXT_COVERAGE})::int AS need
        FROM (SELECT array_agg(w) AS ws FROM unnest(tsvector_to_array(to_tsvector('english', $2))) AS w) t),
    combos AS (
      SELECT ARRAY[quote_literal(w)] AS parts, o AS last FROM terms, unnest(terms.ws) WITH ORDINALITY AS t(w, o)
       WHERE terms.n <= ${MAX_COMBINED_WORDS}
      UNION ALL
      SELECT combos.parts || quote_literal(t.w), t.o FROM combos, terms, unnest(terms.ws) WITH ORDINALITY AS t(w, o)
       WHERE t.o > combos.last AND cardinality(combos.parts) < terms.need),
    words AS MATERIALIZED (
      SELECT to_tsquery('simple', COALESCE(CASE WHEN n <= ${MAX_COMBINED_WORDS}
               THEN (SELECT string_agg('(' || array_to_string(parts, ' & ') || ')', ' | ') FROM combos WHERE cardinality(parts) = terms.need)
               ELSE array_to_string(ARRAY(SELECT quote_literal(w) FROM unnest(ws) AS w), ' | ') END, '')) AS q, n FROM terms),
    ranked AS (
      SELECT c.id, ts_rank_cd(c.content_tsv, words.q) AS rank,
             -- The query words the passage holds: what deleting them removes from its lexemes
             -- (one call, where unnesting both word lists cost 9 µs a passage at 100k).
             (length(c.content_tsv) - length(ts_delete(c.content_tsv, terms.ws)))::float8 / words.n AS coverage
        FROM chunks c, words, terms
       WHERE c.content_tsv @@ words.q AND ${mine}
       ORDER BY rank DESC LIMIT ${TEXT_POOL}),
    txt AS (
      SELECT id, row_number() OVER (ORDER BY coverage DESC, rank DESC, id) AS r FROM ranked
       WHERE coverage >= ${MIN_TEXT_COVERAGE}
       ORDER BY coverage DESC, rank DESC, id LIMIT $5)`;
  // The vector list brings its distances; a passage only full text found has none yet.
  const fused =
    mode === 'vector'
      ? `SELECT id, 1.0 / (${RRF_K} + r) AS score, distance FROM vec`
      : mode === 'text'
        ? `SELECT id, 1.0 / (${RRF_K} + r) AS score, NULL::float8 AS distance FROM txt`
        : `SELECT COALESCE(vec.id, txt.id) AS id,
                  COALESCE(1.0 / (${RRF_K} + vec.r), 0) + COALESCE(1.0 / (${RRF_K} + txt.r), 0) AS score,
                  vec.distance
             FROM vec FULL JOIN txt ON vec.id = txt.id`;
  // The fused list is ordered by score, then its ids are looked up by primary key, and their
  // items too, in LATERAL subqueries that OFFSET 0 keeps from being flattened. The final order
  // refines the score order (ties by distance, then id), so the planner sorts incrementally,
  // one score at a time, and the nested loop stops once `limit` rows pass: the other
  // candidates (both lists give up to 200) are never read again, and the distance a passage
  // found by full text alone needs (from its TOASTed vector) is computed for those only
  // (all of them cost ~5 ms at 100k passages). As plain joins the planner (PGlite has no
  // autovacuum to keep statistics) misjudged the fused list: it computed the distance of every
  // chunk to match 100 ids, ran the vector list once per item, or scanned every item per
  // passage (measured at 10k passages: 650 ms, 2.8 s and 24 ms, against ~5 ms).
  const sql = `
    WITH RECURSIVE ${vectorList}, ${textList},
    fused AS MATERIALIZED (${fused})
    SELECT r.* FROM (SELECT * FROM fused ORDER BY score DESC) f
     CROSS JOIN LATERAL (
       SELECT c.id AS chunk_id, c.item_id, c.publisher_id, p.name AS publisher_name, i.title AS item_title,
              c.ordinal, c.content, d.distance, f.score::float8 AS score,
              i.subtitle, i.type, i.author, i.publication_date, i.item_url, i.item_image, i.item_summary
         FROM chunks c
        CROSS JOIN LATERAL (SELECT COALESCE(f.distance, ${near})::float8 AS distance OFFSET 0) d
        CROSS JOIN LATERAL (SELECT * FROM items i WHERE i.id = c.item_id OFFSET 0) i
         JOIN publishers p ON p.id = c.publisher_id
        WHERE c.id = f.id AND p.organization_id = $6::uuid
          AND i.deleted_at IS NULL AND i.status = '${SEARCHABLE_STATUS}' AND i.${visible}
          AND 1 - d.distance / 2 >= $7
       OFFSET 0) r
     ORDER BY f.score DESC, r.distance, r.chunk_id
     LIMIT $8`;
  return { sql, params: [vector, query.query, query.publisherIds, space.model, candidates, query.organizationId, query.certainty, query.limit, query.itemTypes?.map((t) => t.toLowerCase()) ?? null] };
}

function toPassage(row: PassageRow): Passage {
  return {
    chunkId: row.chunk_id,
    itemId: row.item_id,
    publisherId: row.publisher_id,
    publisherName: row.publisher_name,
    itemTitle: row.item_title,
    ordinal: row.ordinal,
    content: row.content,
    distance: row.distance,
    certainty: Math.min(1, Math.max(0, 1 - row.distance / 2)),
    score: row.score,
    item: {
      subtitle: row.subtitle,
      type: row.type,
      authors: row.author ?? [],
      publicationDate: row.publication_date,
      url: row.item_url,
      image: row.item_image,
      summary: row.item_summary,
    },
  };
}
