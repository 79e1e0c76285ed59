// Retrieval on PostgreSQL/PGlite: one SQL statement per query, hybrid by default.
//
// Candidates come from two legs: the nearest passages by cosine distance (pgvector HNSW), and
// the passages of the best documents by Okapi BM25 over each document's postings, with the
// statistics of the tenants searched (item_terms: document frequencies and lengths). Every
// candidate then gets its evidence, each feature normalised over the candidates:
//   - doc:      the whole document's BM25 (a query whose words are spread over a document)
//   - passage:  the passage's own BM25 (document frequencies as above, passage lengths)
//   - vector:   the passage's cosine certainty (min-max over the candidates)
//   - title:    the share of the query's idf that the document's title holds (the exact
//               name that tells a near miss from the right page)
//   - docVector: the best certainty among the document's candidate passages
// and the score is their convex combination (weights in `RankingOptions`, fitted on the
// tuning part of the retrieval set: scripts/eval-retrieval.ts). Passages are what is returned;
// the document evidence orders them. Every hit must reach the caller's `certainty`,
// (1 + cosine) / 2 as Weaviate defines it, whichever leg found it.
import type { PrismaClient } from '../../../generated/prisma/client.js';
import { ApiError } from '../../errors.js';
import type { CallScope } from '../../gateway/gateway-service.js';
import type { DatabaseCapabilities } from '../../storage/capabilities.js';
import { analyze } from './analyzer.js';
import type { EmbeddingSpace, Passage, RetrievalQuery, Retriever } from './chunk-index.js';
import type { Collections } from './collections.js';
import { SEARCHABLE_STATUS, vectorLiteral } from './pg-chunk-index.js';

/** Embeds one query in the given space (the gateway's embedding call in production). */
export type QueryEmbedder = (space: EmbeddingSpace, text: string, scope?: CallScope) => Promise<number[]>;

export interface RankingOptions {
  /** BM25's term-frequency saturation. */
  k1: number;
  /** BM25's length normalisation, documents. */
  bDocument: number;
  /** BM25's length normalisation, passages. */
  bPassage: number;
  /** Weights of the evidence (normalised features), summing to 1. */
  weights: { doc: number; passage: number; vector: number; title: number; docVector: number };
  /** Passages from the vector leg (and HNSW's ef_search). */
  vectorCandidates: number;
  /** Documents from the keyword leg whose passages become candidates. */
  documentCandidates: number;
  /**
   * How much a conversation's earlier turns count (grounding/conversation.ts). A follow-up
   * that names little ("and how do I undo that?") must be steered by them; a question that
   * stands alone on another subject must not be outvoted by the many words before it.
   */
  context: {
    /** A term only the earlier turns hold counts at most this much against one of the query's own. */
    termWeight: number;
    /** The earlier turns' terms together weigh at most this share of the query's own. */
    termShare: number;
    /** The vector leg searches near the query's own vector moved this far toward the earlier turns' (both unit length). */
    vectorWeight: number;
  };
}

export const DEFAULT_RANKING: RankingOptions = {
  k1: 1.2,
  bDocument: 0.75,
  bPassage: 0.75,
  weights: { doc: 0.3, passage: 0.2, vector: 0.3, title: 0.1, docVector: 0.1 },
  vectorCandidates: 100,
  documentCandidates: 30,
  // Fitted on the tuning half of the follow-ups and topic switches (npm run eval:retrieval).
  context: { termWeight: 0.3, termShare: 0.5, vectorWeight: 0.35 },
};

const VISIBILITY_COLUMN = { search: 'visible_in_search', chat: 'visible_in_chat' } as const;

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

/** The query's terms, each once, weighted by how often the query says it; the context's terms follow, weighted down (RankingOptions.context). */
export function queryTerms(text: string, context: readonly string[] = [], weighting = DEFAULT_RANKING.context): { terms: string[]; weights: number[] } {
  const weights = new Map<string, number>();
  for (const term of analyze(text)) weights.set(term, (weights.get(term) ?? 0) + 1);
  const own = weights.size === 0 ? 1 : [...weights.values()].reduce((a, b) => a + b, 0);
  const earlier = [...new Set(context.flatMap(analyze))].filter((term) => !weights.has(term));
  const each = Math.min(weighting.termWeight, (weighting.termShare * own) / Math.max(1, earlier.length));
  for (const term of earlier) weights.set(term, each);
  return { terms: [...weights.keys()], weights: [...weights.values()] };
}

/** What the vector leg embeds: the query, and the conversation's earlier turns as one text when there are any. */
export const embeddedTexts = (query: Pick<RetrievalQuery, 'query' | 'context'>): string[] =>
  query.context?.length ? [query.query, query.context.join('\n')] : [query.query];

function unit(vector: number[]): number[] {
  const norm = Math.hypot(...vector) || 1;
  return vector.map((x) => x / norm);
}

/** The query's own vector moved `weight` toward its context's. */
function steered(own: number[], context: number[], weight: number): number[] {
  const [a, b] = [unit(own), unit(context)];
  return unit(a.map((x, i) => x + weight * b[i]!));
}

export class PgRetriever implements Retriever {
  readonly available: boolean;

  constructor(
    private readonly prisma: PrismaClient,
    capabilities: DatabaseCapabilities,
    private readonly collections: Collections,
    private readonly embedQuery: QueryEmbedder,
    private readonly ranking: RankingOptions = DEFAULT_RANKING,
  ) {
    this.available = capabilities.vector;
  }

  async retrieve(query: RetrievalQuery, scope?: CallScope): Promise<Passage[]> {
    if (!this.available) {
      throw new ApiError('SERVICE_UNAVAILABLE', 'Semantic search needs pgvector, which this database lacks.');
    }
    if (query.publisherIds.length === 0 || query.limit < 1) return [];
    const space = await this.collections.recordedSpace(query.organizationId);
    // Nothing was ever indexed for this organization: nothing to find, no query to embed.
    if (!space) return [];
    const [own, context] = await Promise.all(embeddedTexts(query).map((text) => this.embedQuery(space, text, scope)));
    const vector = context ? steered(own!, context, this.ranking.context.vectorWeight) : own!;
    scope?.signal.throwIfAborted();
    const { sql, params } = hybridQuery(space, query, vectorLiteral(vector), this.ranking);
    const rows = await this.prisma.$queryRawUnsafe<PassageRow[]>(sql, ...params);
    return rows.map(toPassage);
  }
}

/**
 * The one SQL statement of a retrieval. The vector size is spelled into the SQL (a checked
 * integer) because the HNSW index of that size is an expression index on `embedding::vector(N)`
 * with `vector_dims(embedding) = N` as its predicate: the query must say the same to use it.
 */
export function hybridQuery(space: EmbeddingSpace, query: RetrievalQuery, vector: string, ranking: RankingOptions): { sql: string; params: unknown[] } {
  const d = space.dimensions;
  if (!Number.isInteger(d) || d < 1) throw new RangeError(`invalid vector size ${d}`);
  const visible = VISIBILITY_COLUMN[query.purpose];
  const mode = query.mode ?? 'hybrid';
  const { terms, weights: termWeights } = queryTerms(query.query, query.context, ranking.context);
  const w = mode === 'vector' ? { doc: 0, passage: 0, vector: 1, title: 0, docVector: 0 } : mode === 'text' ? keywordOnly(ranking.weights) : ranking.weights;
  const vectorCandidates = mode === 'text' ? 0 : Math.max(ranking.vectorCandidates, query.limit);
  const documentCandidates = mode === 'vector' ? 0 : ranking.documentCandidates;
  const near = `(c.embedding::vector(${d})) <=> $1::vector(${d})`;
  // Passages of this search's scope: its tenants, visibility and embedding model.
  const mine = `c.publisher_id = ANY($4::uuid[]) AND c.${visible} AND c.embedding_model = $5`;
  // The HNSW scan's settings are made by the statement itself, local to its transaction (one
  // round trip, where SET LOCAL needed a transaction of three statements). The condition on
  // them is constant, so it gates the scan and is evaluated before the scan begins, which is
  // when pgvector reads them. Filtered HNSW scans keep going until enough rows pass the filter
  // (pgvector 0.8); ef_search is the candidate count.
  const settings = `(SELECT set_config('hnsw.ef_search', least(greatest($6::int, 1), 1000)::text, true)
    || set_config('hnsw.iterative_scan', 'relaxed_order', true)) IS NOT NULL`;
  const [k1, bDoc, bPassage] = ['$11::float8', '$12::float8', '$13::float8'];
  // The staged passages of an item being indexed are candidates of neither leg: a scalar
  // subquery on its item (not EXISTS, which the planner makes a join that reads the whole HNSW
  // scan) keeps them from taking searchable passages' places.
  const sql = `
    WITH q AS MATERIALIZED (SELECT term, weight FROM unnest($2::text[], $3::float8[]) AS q(term, weight)),
    stats AS MATERIALIZED (
      SELECT GREATEST(count(*), 1)::float8 AS n, GREATEST(avg(i.term_count), 1)::float8 AS avgdl,
             GREATEST(sum(i.term_count)::float8 / GREATEST(sum(i.chunk_count), 1), 1) AS avgpl
        FROM items i WHERE i.publisher_id = ANY($4::uuid[]) AND i.status = '${SEARCHABLE_STATUS}' AND i.term_count > 0),
    postings AS MATERIALIZED (
      SELECT t.term, t.item_id, t.tf::float8 AS tf, t.doc_terms FROM item_terms t
       WHERE t.publisher_id = ANY($4::uuid[]) AND t.term = ANY($2::text[])),
    idf AS MATERIALIZED (
      SELECT q.term, q.weight * ln(1 + (s.n - COALESCE(df.n, 0) + 0.5) / (COALESCE(df.n, 0) + 0.5)) AS idf
        FROM q CROSS JOIN stats s LEFT JOIN (SELECT term, count(*)::float8 AS n FROM postings GROUP BY term) df ON df.term = q.term),
    docs AS MATERIALIZED (
      SELECT p.item_id, sum(idf.idf * p.tf * (${k1} + 1) / (p.tf + ${k1} * (1 - ${bDoc} + ${bDoc} * p.doc_terms / s.avgdl))) AS score
        FROM postings p JOIN idf ON idf.term = p.term CROSS JOIN stats s GROUP BY p.item_id),
    top_docs AS MATERIALIZED (SELECT item_id FROM docs ORDER BY score DESC, item_id LIMIT $10),
    vec AS MATERIALIZED (
      SELECT c.id, ${near} AS distance FROM chunks c
       WHERE ${settings} AND ${mine} AND vector_dims(c.embedding) = ${d}
         AND (SELECT it.status = '${SEARCHABLE_STATUS}' FROM items it WHERE it.id = c.item_id)
       ORDER BY ${near} LIMIT $6),
    -- Every lookup below is by key, in LATERAL subqueries that OFFSET 0 keeps from being
    -- flattened: the embedded PGlite keeps no planner statistics (no autovacuum), and left to
    -- estimates the planner scanned every item of a tenant per candidate (300 ms).
    ids AS MATERIALIZED (
      SELECT id, distance FROM vec
      UNION ALL
      SELECT c.id, NULL FROM top_docs t
       CROSS JOIN LATERAL (SELECT c.id FROM chunks c WHERE c.item_id = t.item_id AND c.${visible} AND c.embedding_model = $5 OFFSET 0) c
       WHERE c.id NOT IN (SELECT id FROM vec)),
    cand AS MATERIALIZED (
      SELECT c.id, c.item_id, c.terms, c.term_count, COALESCE(ids.distance, ${near})::float8 AS distance, i.title_terms
        FROM ids
       CROSS JOIN LATERAL (SELECT * FROM chunks c WHERE c.id = ids.id OFFSET 0) c
       CROSS JOIN LATERAL (
             SELECT i.title_terms FROM items i
              WHERE i.id = c.item_id AND i.publisher_id = ANY($4::uuid[]) AND i.deleted_at IS NULL
                AND i.status = '${SEARCHABLE_STATUS}' AND i.${visible} AND ($9::text[] IS NULL OR lower(i.type) = ANY($9::text[]))
                AND (SELECT p.organization_id = $7::uuid FROM publishers p WHERE p.id = i.publisher_id)
             OFFSET 0) i),
    -- The documents' scores as a map: looked up per candidate, where a join of the two lists
    -- became a nested loop over both once the planner had statistics (165 ms).
    doc_map AS MATERIALIZED (SELECT COALESCE(jsonb_object_agg(item_id, score), '{}') AS m FROM docs),
    total_idf AS MATERIALIZED (SELECT NULLIF(sum(idf), 0) AS n FROM idf),
    feat AS MATERIALIZED (
      SELECT c.id, c.item_id, c.distance, 1 - c.distance / 2 AS certainty, COALESCE((dm.m ->> c.item_id::text)::float8, 0) AS doc_score,
             COALESCE((SELECT sum(idf.idf * x.tf * (${k1} + 1) / (x.tf + ${k1} * (1 - ${bPassage} + ${bPassage} * c.term_count / s.avgpl)))
                         FROM idf CROSS JOIN LATERAL (SELECT (c.terms ->> idf.term)::float8 AS tf) x WHERE x.tf > 0), 0) AS passage_score,
             COALESCE((SELECT sum(idf.idf) FROM idf WHERE idf.term = ANY(c.title_terms)) / (SELECT n FROM total_idf), 0) AS title_score
        FROM cand c CROSS JOIN doc_map dm CROSS JOIN stats s
       WHERE 1 - c.distance / 2 >= $8),
    norm AS (
      SELECT f.*, max(f.doc_score) OVER () AS doc_max, max(f.passage_score) OVER () AS passage_max,
             min(f.certainty) OVER () AS c_min, max(f.certainty) OVER () AS c_max,
             max(f.certainty) OVER (PARTITION BY f.item_id) AS doc_certainty
        FROM feat f),
    scored AS (
      SELECT n.id, n.distance,
             $14::float8 * COALESCE(n.doc_score / NULLIF(n.doc_max, 0), 0)
           + $15::float8 * COALESCE(n.passage_score / NULLIF(n.passage_max, 0), 0)
           + $16::float8 * COALESCE((n.certainty - n.c_min) / NULLIF(n.c_max - n.c_min, 0), 0)
           + $17::float8 * n.title_score
           + $18::float8 * COALESCE((n.doc_certainty - n.c_min) / NULLIF(n.c_max - n.c_min, 0), 0) AS score
        FROM norm n ORDER BY score DESC, n.distance, n.id LIMIT $19)
    SELECT c.id AS chunk_id, c.item_id, c.publisher_id, p.name AS publisher_name, i.title AS item_title,
           c.ordinal, c.content, s.distance, s.score::float8 AS score,
           i.subtitle, i.type, i.author, i.publication_date, i.item_url, i.item_image, i.item_summary
      FROM scored s JOIN chunks c ON c.id = s.id JOIN items i ON i.id = c.item_id JOIN publishers p ON p.id = c.publisher_id
     ORDER BY s.score DESC, s.distance, s.id`;
  return {
    sql,
    params: [
      vector,
      terms,
      termWeights,
      query.publisherIds,
      space.model,
      vectorCandidates,
      query.organizationId,
      query.certainty,
      query.itemTypes?.map((t) => t.toLowerCase()) ?? null,
      documentCandidates,
      ranking.k1,
      ranking.bDocument,
      ranking.bPassage,
      w.doc,
      w.passage,
      w.vector,
      w.title,
      w.docVector,
      query.limit,
    ],
  };
}

/** The keyword evidence alone, its weights rescaled to sum to 1 (the keyword leg's own figures). */
function keywordOnly(weights: RankingOptions['weights']): RankingOptions['weights'] {
  const sum = weights.doc + weights.passage + weights.title || 1;
  return { doc: weights.doc / sum, passage: weights.passage / sum, vector: 0, title: weights.title / sum, docVector: 0 };
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
