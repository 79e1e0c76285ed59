// Where the windows are counted. With Redis (REDIS_URL) every instance shares one count;
// alone, in process. When Redis is configured but cannot answer (down, unreachable, slower
// than HOT_PATH_TIMEOUT_MS) the request is decided by this instance's local windows instead
// of being refused or waiting: requests keep flowing, each instance enforcing the full
// limit on its own (so N instances may admit up to N × the limit while Redis is away). The
// switch is logged once each way and every locally made decision is counted in the metrics
// (rate_limit_local_decisions_total); the prepaid credit and cap gates, kept in the
// database, still hold in the meantime.
import { Counter as PromCounter } from 'prom-client';
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.js';
import { RedisFallback } from '../storage/redis-fallback.js';
import type { RedisConnections } from '../storage/redis.js';
import { RedisWindows } from './redis-window.js';
import { LocalWindows, type WindowStore } from './window.js';
import type { Counter, Decision } from './window.js';

export class RateLimiter {
  private readonly fallback: RedisFallback;
  readonly refusals: PromCounter<'scope' | 'unit'>;

  constructor(
    private readonly local: LocalWindows,
    private readonly shared: WindowStore | null,
    logger: Logger,
    metrics: Metrics,
  ) {
    this.fallback = new RedisFallback(
      {
        metric: 'rate_limit_local_decisions_total',
        help: 'Rate-limit decisions made by this instance alone because Redis could not answer (reason: redis_unavailable).',
        degraded: 'rate limits are counted per instance until it is back',
        restored: 'rate limits are global across instances again',
      },
      logger,
      metrics,
    );
    this.refusals = new PromCounter({
      name: 'rate_limit_refusals_total',
      help: 'Requests refused with 429 QUOTA_EXCEEDED, by scope (key, organization) and unit (requests, tokens).',
      labelNames: ['scope', 'unit'] as const,
      registers: [metrics.registry],
    });
  }

  /** Whether decisions are currently made locally although Redis is configured. */
  get fallingBack(): boolean {
    return this.fallback.fallingBack;
  }

  take(counters: readonly Counter[]): Promise<Decision> {
    const shared = this.shared;
    if (!shared) return this.local.take(counters);
    return this.fallback.run(
      () => shared.take(counters),
      () => this.local.take(counters),
    );
  }
}

export interface RunningLimiter {
  limiter: RateLimiter;
  close(): Promise<void>;
}

/** The limiter of one platform instance; with Redis, on its fail-fast connection (storage/redis.ts). */
export function createRateLimiter(redis: RedisConnections | null, logger: Logger, metrics: Metrics): RunningLimiter {
  const local = new LocalWindows();
  const sweeper = setInterval(() => local.sweep(), 60_000);
  sweeper.unref();
  const limiter = new RateLimiter(local, redis ? new RedisWindows(redis.hotPath) : null, logger, metrics);
  return {
    limiter,
    async close() {
      clearInterval(sweeper);
    },
  };
}
