// The seam between ingestion (which writes an item's passages) and retrieval (search,
// recommendations, grounded answers, which read them). The `chunks` table is the index;
// this module owns how it is written and read. Implementations live beside this file.
import type { Prisma } from '../../../generated/prisma/client.js';
import type { CallScope } from '../../gateway/gateway-service.js';
import type { TermStatistics } from './analyzer.js';

/** Which embedding model (and vector size) a collection's vectors come from: fixed when the collection is first filled, never mixed. */
export interface EmbeddingSpace {
  model: string;
  dimensions: number;
}

/** One passage of an item, ready to store. */
export interface IndexedChunk {
  ordinal: number;
  content: string;
  tokenCount: number;
  embedding: number[];
  /** Its keyword statistics when already analyzed (ingestion does it in a worker thread); else analyzed when staged. */
  terms?: TermStatistics;
}

/**
 * Checks, inside the transaction of a write to the index, that the writer may still write
 * (for ingestion: its job was neither taken over nor superseded), and throws when not. It
 * holds what it checked locked until the write commits.
 */
export type WriteGuard = (tx: Prisma.TransactionClient) => Promise<void>;

/**
 * An item's passages are written in two steps, so a long document never has to be held (or
 * sent) whole: `stage` adds them in batches, invisible to retrieval, then `publish` makes the
 * staged set the item's searchable content in one short transaction. Readers see the old set
 * or the new one, never a mix, and never an item whose indexing is unfinished.
 */
export interface ChunkIndex {
  /** The embedding space the given publisher's passages are indexed in. */
  embeddingSpace(publisherId: string): Promise<EmbeddingSpace>;
  /**
   * Adds passages to the item's staged set; `first` starts the set afresh, dropping whatever
   * the item held (its item is not searchable while it is being indexed). False when the item
   * was deleted.
   */
  stage(itemId: string, space: EmbeddingSpace, chunks: IndexedChunk[], options: { first: boolean; guard?: WriteGuard }): Promise<boolean>;
  /** Makes the `count` staged passages the item's content, searchable (COMPLETED). False when the item was deleted. */
  publish(itemId: string, count: number, guard?: WriteGuard): Promise<boolean>;
  /** Stages `chunks` and publishes them: for passages written outside the ingestion queue (seeding, tools). */
  replaceItemChunks(itemId: string, space: EmbeddingSpace, chunks: IndexedChunk[]): Promise<void>;
}

/** The item a passage belongs to: what search hits and recommendations show of it. */
export interface PassageItem {
  subtitle: string | null;
  type: string | null;
  authors: string[];
  publicationDate: string | null;
  url: string | null;
  image: string | null;
  summary: string | null;
}

/** A passage found for a query. */
export interface Passage {
  chunkId: string;
  itemId: string;
  publisherId: string;
  publisherName: string;
  itemTitle: string | null;
  ordinal: number;
  content: string;
  /** Weaviate's certainty of the vector match: (1 + cosine) / 2. */
  certainty: number;
  /** Cosine distance to the query, 1 - cosine (so certainty = 1 - distance / 2). */
  distance: number;
  /** The fused hybrid rank score (higher is better). */
  score: number;
  item: PassageItem;
}

/** How candidates are ranked: both lists fused (the default), or one alone (evaluation). */
export type RankingMode = 'hybrid' | 'vector' | 'text';

export interface RetrievalQuery {
  organizationId: string;
  /** Restrict to these publishers (all of them must belong to the organization). */
  publisherIds: string[];
  query: string;
  /** Earlier turns of a conversation, oldest first: a follow-up is read with them, weighted below `query`. */
  context?: string[];
  limit: number;
  /** Minimum certainty, 0..1. */
  certainty: number;
  /** `search` reads items visible in search, `chat` those visible in chat. */
  purpose: 'search' | 'chat';
  /** Default `hybrid`. */
  mode?: RankingMode;
  /** Only items of these types (case-insensitive), e.g. recommendations' `media_types`. */
  itemTypes?: string[];
}

export interface Retriever {
  /**
   * Passages best first. Throws ApiError 503 on a database without pgvector (no semantic
   * search there: see server/storage/capabilities.ts); check `available` to avoid it.
   */
  /** `scope`: the request's signal and usage meter (the query is embedded by a model, and metered). */
  retrieve(query: RetrievalQuery, scope?: CallScope): Promise<Passage[]>;
  /** Whether this database can retrieve at all (it has pgvector). */
  readonly available: boolean;
}
