// Where the windows are counted. With Redis (REDIS_URL) every instance shares one count;
// alone, in process. When Redis is configured but cannot answer (down, unreachable, slower
// than COMMAND_TIMEOUT_MS) the request is decided by this instance's local windows instead
// of being refused or waiting: requests keep flowing, each instance enforcing the full
// limit on its own (so N instances may admit up to N × the limit while Redis is away). The
// switch is logged once each way and every locally made decision is counted in the metrics
// (rate_limit_local_decisions_total); the prepaid credit and cap gates, kept in the
// database, still hold in the meantime.
import { Counter as PromCounter } from 'prom-client';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.js';
import type { RedisConnections } from '../storage/redis.js';
import { RedisWindows } from './redis-window.js';
import { LocalWindows, type Counter, type Decision, type WindowStore } from './window.js';

/** A limiter decision may not wait longer on Redis than this before it is made locally. */
export const COMMAND_TIMEOUT_MS = 1_000;

export class RateLimiter {
  private degraded = false;
  private readonly localDecisions: PromCounter<'reason'>;
  readonly refusals: PromCounter<'scope' | 'unit'>;

  constructor(
    private readonly local: LocalWindows,
    private readonly shared: WindowStore | null,
    private readonly logger: Logger,
    metrics: Metrics,
  ) {
    this.localDecisions = new PromCounter({
      name: 'rate_limit_local_decisions_total',
      help: 'Rate-limit decisions made by this instance alone because Redis could not answer (reason: redis_unavailable).',
      labelNames: ['reason'] as const,
      registers: [metrics.registry],
    });
    this.refusals = new PromCounter({
      name: 'rate_limit_refusals_total',
      help: 'Requests refused with 429 QUOTA_EXCEEDED, by scope (key, organization) and unit (requests, tokens).',
      labelNames: ['scope', 'unit'] as const,
      registers: [metrics.registry],
    });
  }

  /** Whether decisions are currently made locally although Redis is configured. */
  get fallingBack(): boolean {
    return this.degraded;
  }

  async take(counters: readonly Counter[]): Promise<Decision> {
    if (this.shared) {
      try {
        const decision = await this.shared.take(counters);
        if (this.degraded) {
          this.degraded = false;
          this.logger.info('Redis answers again: rate limits are global across instances again');
        }
        return decision;
      } catch (error) {
        if (!this.degraded) {
          this.degraded = true;
          this.logger.warn({ err: (error as Error).message }, 'Redis cannot answer: rate limits are counted per instance until it is back');
        }
        this.localDecisions.inc({ reason: 'redis_unavailable' });
      }
    }
    return this.local.take(counters);
  }
}

export interface RunningLimiter {
  limiter: RateLimiter;
  close(): Promise<void>;
}

/**
 * The limiter of one platform instance. Its Redis connection is its own and never queues a
 * command while disconnected, so an outage is noticed at once rather than after retries.
 */
export async function createRateLimiter(redis: RedisConnections | null, logger: Logger, metrics: Metrics): Promise<RunningLimiter> {
  const local = new LocalWindows();
  const sweeper = setInterval(() => local.sweep(), 60_000);
  sweeper.unref();
  let connection: Redis | null = null;
  if (redis) {
    connection = redis.client.duplicate({ enableOfflineQueue: false, commandTimeout: COMMAND_TIMEOUT_MS, maxRetriesPerRequest: 0 });
    // Errors show as fallback decisions (logged once by the limiter); the shared connections already log them.
    connection.on('error', (error) => logger.debug({ err: error.message }, 'rate-limit redis connection error'));
    await connection.connect();
  }
  const limiter = new RateLimiter(local, connection ? new RedisWindows(connection) : null, logger, metrics);
  return {
    limiter,
    async close() {
      clearInterval(sweeper);
      if (connection) await connection.quit().catch(() => connection?.disconnect());
    },
  };
}
