// What the hot-path users of Redis (rate limits, inference idempotency keys, billing holds)
// do when it cannot answer: the request is decided by this instance alone instead of being
// refused or kept waiting. The switch is logged once each way, and every decision made
// locally while Redis is configured is counted in `<metric>{reason="redis_unavailable"}`.
import { Counter } from 'prom-client';
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.js';

export interface FallbackDescription {
  /** Prometheus counter of the decisions made locally. */
  metric: string;
  help: string;
  /** Logged when Redis stops answering, e.g. "rate limits are counted per instance until it is back". */
  degraded: string;
  /** Logged when it answers again. */
  restored: string;
}

export class RedisFallback {
  private degraded = false;
  private readonly localDecisions: Counter<'reason'>;

  constructor(
    private readonly description: FallbackDescription,
    private readonly logger: Logger,
    metrics: Metrics,
  ) {
    this.localDecisions = new Counter({ name: description.metric, help: description.help, labelNames: ['reason'] as const, registers: [metrics.registry] });
  }

  /** Whether decisions are currently made locally although Redis is configured. */
  get fallingBack(): boolean {
    return this.degraded;
  }

  /** `shared` when Redis answers, else `local` (which may not use Redis). */
  async run<T>(shared: () => Promise<T>, local: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await shared();
    } catch (error) {
      this.failed(error);
      return local();
    }
    this.answered();
    return result;
  }

  /** Redis answered: leaves the fallback if it was in it. */
  answered(): void {
    if (!this.degraded) return;
    this.degraded = false;
    this.logger.info(`Redis answers again: ${this.description.restored}`);
  }

  /** Redis failed: enters the fallback (logged once) and counts the local decision. */
  failed(error: unknown): void {
    if (!this.degraded) {
      this.degraded = true;
      this.logger.warn({ err: (error as Error).message }, `Redis cannot answer: ${this.description.degraded}`);
    }
    this.localDecisions.inc({ reason: 'redis_unavailable' });
  }
}
