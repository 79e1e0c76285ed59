// The Redis copies of the billing pools (REDIS_URL): holds are taken there by one script,
// with the database as the fallback while Redis cannot answer (logged once, counted). Used by
// the accounts (a changed pool's copy is replaced) and the reservations (holds and settles).
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.js';
import { RedisFallback } from '../storage/redis-fallback.js';
import type { Incarnations } from './instances.js';
import type { PoolState } from './pools.js';
import { RedisHolds } from './redis-holds.js';

export class HotCopies {
  readonly holds: RedisHolds;
  private readonly fallback: RedisFallback;

  constructor(
    redis: Redis,
    metrics: Metrics,
    logger: Logger,
    private readonly incarnations: Incarnations,
  ) {
    this.holds = new RedisHolds(redis);
    this.fallback = new RedisFallback(
      {
        metric: 'billing_database_holds_total',
        help: 'Billing holds (and their settlements) kept in the database because Redis could not answer (reason: redis_unavailable).',
        degraded: 'billing holds are taken in the database until it is back',
        restored: 'billing holds are taken in Redis again',
      },
      logger,
      metrics,
    );
  }

  /** A Redis step of the hot path; null when Redis could not answer (logged once, counted). */
  run<T>(step: () => Promise<T>): Promise<T | null> {
    return this.fallback.run(step, async () => null);
  }

  /** Writes a pool's row as just committed to its Redis copy (best effort: a copy also expires). */
  async install(organizationId: string, product: string | null, state: PoolState): Promise<void> {
    await this.run(() => this.holds.install(organizationId, product, state));
  }

  /** What Redis holds of a pool (0 while it cannot answer). */
  async held(organizationId: string, product: string | null): Promise<bigint> {
    return (await this.run(() => this.holds.held(organizationId, product, this.incarnations.dead))) ?? 0n;
  }
}
