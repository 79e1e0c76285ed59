// The bookkeeping of one upstream call, the same for chat, streams, embeddings and images:
// the deployment's health (in flight, circuit), the metrics (calls, latency, tokens), its
// trace span (when traced) and the request's Attempt record that billing reads.
import type { Metrics } from '../observability/metrics.js';
import type { TraceSpan } from '../observability/tracing.js';
import { estimateMessageTokens, estimateTokens } from '../providers/local/tokens.js';
import { ProviderError, type ChatMessage, type ToolCall, type Usage } from '../providers/types.js';
import { failureSummary, kindFacts } from './upstream-failures.js';
import type { DeploymentHealth, HealthOutcome } from './health.js';

/** One upstream call of a request, for logs and billing. */
export interface Attempt {
  deploymentId: string;
  modelId: string;
  outcome: 'ok' | ProviderError['kind'] | 'aborted' | 'error';
  usage?: Usage;
  /** Images drawn (the image_generation tool), priced per image. */
  images?: number;
}

export class UpstreamCall {
  readonly attempt: Attempt;
  private readonly started = performance.now();
  /** Until the answer (a stream: its first event) arrived; what health judges as slow. */
  private latencyMs: number | undefined;
  private readonly end: (outcome: HealthOutcome) => void;
  settled = false;

  constructor(
    deploymentId: string,
    modelId: string,
    health: DeploymentHealth,
    private readonly metrics: Metrics | undefined,
    private readonly span: TraceSpan | null = null,
  ) {
    this.attempt = { deploymentId, modelId, outcome: 'ok' };
    this.end = health.begin(deploymentId);
  }

  /** The answer arrived (a stream: its first event). A long stream is not a slow upstream. */
  answered(): void {
    this.latencyMs = performance.now() - this.started;
    this.metrics?.upstreamLatency.observe({ deployment: this.attempt.deploymentId }, this.latencyMs / 1000);
  }

  succeed(usage: Usage): void {
    if (this.settled) return;
    this.settled = true;
    const { attempt, metrics } = this;
    attempt.usage = usage;
    metrics?.upstreamCalls.inc({ deployment: attempt.deploymentId, outcome: 'ok' });
    metrics?.tokens.inc({ model: attempt.modelId, kind: 'prompt' }, usage.promptTokens);
    if (usage.completionTokens > 0) metrics?.tokens.inc({ model: attempt.modelId, kind: 'completion' }, usage.completionTokens);
    if (usage.cachedTokens) metrics?.tokens.inc({ model: attempt.modelId, kind: 'cached_prompt' }, usage.cachedTokens);
    if (usage.cacheWriteTokens) metrics?.tokens.inc({ model: attempt.modelId, kind: 'cache_write' }, usage.cacheWriteTokens);
    this.end({ ok: true, latencyMs: this.latencyMs ?? performance.now() - this.started });
    if (this.span) {
      this.span.set({ 'gen_ai.usage.input_tokens': usage.promptTokens, 'gen_ai.usage.output_tokens': usage.completionTokens, 'gateway.outcome': 'ok' });
      this.span.end();
    }
  }

  /** `aborted`: the caller left, which says nothing about the deployment. */
  fail(error: unknown, aborted: boolean, usage?: Usage): void {
    if (this.settled) return;
    this.settled = true;
    const facts = kindFacts(error);
    const { attempt } = this;
    attempt.usage = usage;
    attempt.outcome = aborted ? 'aborted' : (facts.kind ?? 'error');
    this.metrics?.upstreamCalls.inc({ deployment: attempt.deploymentId, outcome: attempt.outcome });
    this.end({
      ok: false,
      error: aborted ? 'client went away' : failureSummary(error),
      countsAsFailure: !aborted && facts.unhealthy,
      retryAfterMs: error instanceof ProviderError ? error.details.retryAfterMs : undefined,
    });
    if (this.span) {
      this.span.set({ 'gateway.outcome': attempt.outcome, 'gen_ai.usage.input_tokens': usage?.promptTokens, 'gen_ai.usage.output_tokens': usage?.completionTokens });
      this.span.fail(error);
    }
  }
}

/**
 * What a call used when the upstream did not say: the prompt (with any earlier attempts'
 * text, which a resumed attempt reads as its prefix) and the output.
 */
export function estimateUsage(messages: ChatMessage[], before: string, output: string, toolCalls?: ToolCall[]): Usage {
  let completionTokens = estimateTokens(output);
  for (const call of toolCalls ?? []) completionTokens += estimateTokens(call.function.name) + estimateTokens(call.function.arguments);
  return { promptTokens: estimateMessageTokens(messages) + estimateTokens(before), completionTokens };
}
