// Where the response cache keeps answers (serialized): in this process's memory, bounded by
// bytes with the least recently used dropped first, or in Redis when instances share one,
// expiring by Redis's own TTL. While Redis cannot answer, a lookup is a miss and nothing is
// stored (logged once each way, counted): a cache is never worth failing or delaying a request.
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { Metrics } from '../../observability/metrics.js';
import { RedisFallback } from '../../storage/redis-fallback.js';

export interface AnswerStore {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
}

export class MemoryAnswerStore implements AnswerStore {
  private readonly answers: LRUCache<string, string>;

  constructor(maxBytes: number) {
    this.answers = new LRUCache({ maxSize: maxBytes, sizeCalculation: (value, key) => value.length + key.length });
  }

  async get(key: string): Promise<string | undefined> {
    return this.answers.get(key);
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.answers.set(key, value, { ttl: ttlMs });
  }
}

const PREFIX = 'response-cache:';

export class RedisAnswerStore implements AnswerStore {
  private readonly fallback: RedisFallback;

  /** `redis`: the fail-fast hot-path connection (storage/redis.ts). */
  constructor(
    private readonly redis: Redis,
    logger: Logger,
    metrics: Metrics,
  ) {
    this.fallback = new RedisFallback(
      {
        metric: 'response_cache_local_decisions_total',
        help: 'Response cache lookups answered as misses, and answers not stored, because Redis could not answer (reason: redis_unavailable).',
        degraded: 'response cache lookups are misses until it is back',
        restored: 'the response cache is used again',
      },
      logger,
      metrics,
    );
  }

  get(key: string): Promise<string | undefined> {
    return this.fallback.run(
      async () => (await this.redis.get(PREFIX + key)) ?? undefined,
      async () => undefined,
    );
  }

  set(key: string, value: string, ttlMs: number): Promise<void> {
    return this.fallback.run(
      async () => void (await this.redis.set(PREFIX + key, value, 'PX', ttlMs)),
      async () => undefined,
    );
  }
}
