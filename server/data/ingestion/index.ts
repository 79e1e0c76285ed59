// Composition of ingestion, built once at start: the queue, this instance's worker, its parse
// threads and the service the upload handlers call. Embeddings go through the gateway, in the space the
// chunk index names for the publisher.
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { ApiError } from '../../errors.js';
import type { GatewayService } from '../../gateway/gateway-service.js';
import type { OrganizationService } from '../../identity/organizations.js';
import type { Database } from '../../storage/database.js';
import type { ChunkIndex } from '../search/chunk-index.js';
import { IngestionService } from './ingestion-service.js';
import { JobQueue } from './job-queue.js';
import { ParsePool } from './parse-pool.js';
import type { PassageEmbedder } from './pipeline.js';
import { IngestionWorker } from './worker.js';

export interface Ingestion {
  service: IngestionService;
  worker: IngestionWorker;
  queue: JobQueue;
  parser: ParsePool;
  /** Stops the worker (running jobs go back to the queue), then the parse threads. */
  close(): Promise<void>;
}

/** Idle workers look for jobs queued by other instances (or retries coming due) this often. */
const POLL_MS = 1_000;

export function gatewayEmbedder(gateway: GatewayService): PassageEmbedder {
  const modelOf = (id: string) => {
    const model = gateway.catalog.models.get(id);
    // The recorded space's model left the catalog: retried, in case it comes back.
    if (!model || model.type !== 'embedding') throw new ApiError('SERVICE_UNAVAILABLE', `The embedding model ${id} is not in the model catalog.`);
    return model;
  };
  return {
    async embed(space, texts, signal) {
      const { result } = await gateway.embed(modelOf(space.model).id, texts, space.dimensions, { signal, meter: null });
      return result.vectors;
    },
    maxInputTokens: (space) => modelOf(space.model).context_window,
  };
}

export function createIngestion(options: {
  database: Database;
  organizations: OrganizationService;
  chunkIndex: ChunkIndex;
  embedder: PassageEmbedder;
  config: Pick<
    Config,
    'ingestionWorkers' | 'ingestionLeaseMs' | 'ingestionMaxAttempts' | 'ingestionRetryBaseMs' | 'ingestParseThreads' | 'ingestWorkerMemoryMb' | 'ingestJobBudgetMs' | 'ingestLimits'
  >;
  logger: Logger;
}): Ingestion {
  const { config } = options;
  const queue = new JobQueue(options.database.prisma, {
    leaseMs: config.ingestionLeaseMs,
    maxAttempts: config.ingestionMaxAttempts,
    retryBaseMs: config.ingestionRetryBaseMs,
  });
  const parser = new ParsePool(config);
  const worker = new IngestionWorker({ queue, chunkIndex: options.chunkIndex, embedder: options.embedder, parser }, options.logger, {
    concurrency: config.ingestionWorkers,
    pollMs: POLL_MS,
  });
  return {
    service: new IngestionService(options.database.prisma, options.organizations, queue, worker),
    worker,
    queue,
    parser,
    close: () => worker.stop().finally(() => parser.close()),
  };
}
