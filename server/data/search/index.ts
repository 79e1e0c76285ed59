// Composition of the search index, built once at start: collections, the chunk index that
// ingestion writes and the retriever that search, recommendations and grounding read.
import { LRUCache } from 'lru-cache';
import { ApiError } from '../../errors.js';
import type { CallScope, GatewayService } from '../../gateway/gateway-service.js';
import type { Logger } from 'pino';
import type { Database } from '../../storage/database.js';
import type { ChunkIndex, EmbeddingSpace, Retriever } from './chunk-index.js';
import { Collections } from './collections.js';
import { PgChunkIndex } from './pg-chunk-index.js';
import { PlannerStatistics } from './planner-statistics.js';
import { PgRetriever } from './pg-retriever.js';
import { SearchService } from './search-service.js';

export interface SearchIndex {
  collections: Collections;
  chunkIndex: ChunkIndex;
  retriever: Retriever;
  search: SearchService;
}

export interface SearchIndexOptions {
  /** The default collection's name (SEARCH_COLLECTION). */
  collection: string;
  /** The catalog embedding model new collections are filled with (SEARCH_EMBEDDING_MODEL); undefined: chosen from the catalog. */
  embeddingModel: string | undefined;
  logger: Logger;
}

const BUILT_IN_EMBEDDING_MODEL = 'local-embedding';

/**
 * Recent query vectors (a few MB at most): searches repeat (a popular question, a client
 * paging, a grounded turn asked again), and on the embedded default embedding the query
 * costs more than the search statement itself. Keyed by space, so vectors are never mixed.
 */
const QUERY_VECTOR_CACHE = { max: 2_000, ttl: 10 * 60_000 };

/**
 * The space new collections get. A model named in the configuration must exist (a typo is a
 * start-up error); otherwise the built-in one, else the catalog's first embedding model. A
 * catalog without any leaves it null: the data engine then answers 503, the rest still runs.
 */
function defaultSpace(gateway: GatewayService, configured: string | undefined): EmbeddingSpace | null {
  const models = [...gateway.catalog.models.values()].filter((m) => m.type === 'embedding' && m.dimensions);
  if (configured !== undefined) {
    const model = models.find((m) => m.id === configured);
    if (!model) throw new Error(`SEARCH_EMBEDDING_MODEL=${configured} is not an embedding model of the catalog`);
    return { model: model.id, dimensions: model.dimensions! };
  }
  const model = models.find((m) => m.id === BUILT_IN_EMBEDDING_MODEL) ?? models[0];
  return model ? { model: model.id, dimensions: model.dimensions! } : null;
}

export function createSearchIndex(database: Database, gateway: GatewayService, options: SearchIndexOptions): SearchIndex {
  const collections = new Collections(database.prisma, options.collection, defaultSpace(gateway, options.embeddingModel));
  // Queries are embedded through the gateway like passages, in the collection's recorded space.
  const vectors = new LRUCache<string, number[]>(QUERY_VECTOR_CACHE);
  const embedQuery = async (space: EmbeddingSpace, text: string, scope?: CallScope) => {
    if (gateway.catalog.models.get(space.model)?.type !== 'embedding') {
      throw new ApiError('SERVICE_UNAVAILABLE', `The collection's embedding model ${space.model} is not in the model catalog.`);
    }
    const key = `${space.model}\u0000${space.dimensions}\u0000${text}`;
    const known = vectors.get(key);
    if (known) return known;
    const { result } = await gateway.embed(space.model, [text], space.dimensions, scope ?? { signal: AbortSignal.timeout(30_000), meter: null });
    vectors.set(key, result.vectors[0]!);
    return result.vectors[0]!;
  };
  const retriever = new PgRetriever(database.prisma, database.capabilities, collections, embedQuery);
  const statistics = new PlannerStatistics(database.prisma, options.logger);
  // Gathered at start in the background: a database indexed by an earlier release has none.
  void statistics.refresh();
  return {
    collections,
    chunkIndex: new PgChunkIndex(database.prisma, database.capabilities, collections, statistics),
    retriever,
    search: new SearchService(database.prisma, collections, retriever),
  };
}
