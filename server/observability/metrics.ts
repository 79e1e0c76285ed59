// Prometheus metrics of the platform (prom-client), served on the management port at
// /api/v1/metrics. One registry per platform instance, so in-process test platforms do
// not share counters.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();

  readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by API, operation and status.',
    labelNames: ['api', 'operation', 'status'] as const,
    registers: [this.registry],
  });

  readonly upstreamCalls = new Counter({
    name: 'gateway_upstream_calls_total',
    help: 'Upstream model calls by deployment and outcome.',
    labelNames: ['deployment', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly upstreamLatency = new Histogram({
    name: 'gateway_upstream_duration_seconds',
    help: 'Time from an upstream call to its answer (streams: to their first event).',
    labelNames: ['deployment'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly tokens = new Counter({
    name: 'gateway_tokens_total',
    help: 'Tokens by model and kind: prompt, completion, and of the prompt those read from (cached_prompt) or written to (cache_write) a prompt cache.',
    labelNames: ['model', 'kind'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** A gauge read when scraped, e.g. circuit states. */
  gauge(name: string, help: string, labelNames: readonly string[], collect: (set: (labels: Record<string, string>, value: number) => void) => void): void {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        collect((labels, value) => this.set(labels, value));
      },
    });
  }
}
