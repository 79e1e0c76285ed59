// The inference gateway: every model call of the platform goes through here (chat
// completions, the Responses API, grounded answers, embeddings). It picks a deployment for
// a route plan, fails over before the first byte reaches the client, resumes a stream that
// breaks after it started, and keeps each deployment's health.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ApiError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import {
  ProviderError,
  type CallContext,
  type ChatRequest,
  type ChatResult,
  type ChatStreamEvent,
  type EmbedResult,
  type ImageRequest,
  type ImageResult,
  type Provider,
  type Usage,
} from '../providers/types.js';
import { estimateMessageTokens, estimateTokens } from '../providers/local/tokens.js';
import type { Catalog, DeploymentConfig, ModelConfig } from './catalog.js';
import { kindFacts, toCallerError } from './errors.js';
import type { DeploymentHealth } from './health.js';
import type { RoutePlan } from './routing.js';
import { trackUsage } from './usage-scope.js';

/** Who answered (or is answering) a call. */
export interface Served {
  model: ModelConfig;
  deployment: DeploymentConfig;
  /** The provider id of the catalog (`openai`, `anthropic`, `local`, …). */
  provider: string;
}

/** One upstream call of a request, for logs and billing. */
export interface Attempt {
  deploymentId: string;
  modelId: string;
  outcome: 'ok' | ProviderError['kind'] | 'aborted' | 'error';
  usage?: Usage;
}

export interface ChatCall {
  plan: RoutePlan;
  /** The operation asking (failover.routes may configure it differently). */
  operation?: string;
  request: Omit<ChatRequest, 'model'>;
  signal: AbortSignal;
  log: Logger;
}

export interface ChatOutcome {
  result: ChatResult;
  served: Served;
  attempts: Attempt[];
}

/** A committed stream: its first event has arrived; iterate it for the rest. */
export interface GatewayStream extends AsyncIterable<ChatStreamEvent> {
  /** Who answers now (changes when a broken stream is resumed elsewhere). */
  readonly served: Served;
  readonly attempts: Attempt[];
}

interface Candidate {
  model: ModelConfig;
  deployment: DeploymentConfig;
}

export class GatewayService {
  constructor(
    readonly catalog: Catalog,
    private readonly providers: ReadonlyMap<string, Provider>,
    readonly health: DeploymentHealth,
    private readonly metrics?: Metrics,
  ) {}

  private callContext(signal: AbortSignal): CallContext {
    const t = this.catalog.timeouts;
    return { signal, timeouts: { connectMs: t.connect_ms, firstTokenMs: t.first_token_ms, idleMs: t.idle_ms } };
  }

  private served(c: Candidate): Served {
    return { model: c.model, deployment: c.deployment, provider: c.deployment.provider };
  }

  /**
   * The next deployment to try: healthy and not tried yet. Auto-routing and direct
   * selection keep the plan's model order; model_family weighs all of the family's
   * deployments together (weight / load).
   */
  private next(plan: RoutePlan, tried: ReadonlySet<string>, filter: (c: Candidate) => boolean = () => true): Candidate | null {
    const pool: Candidate[] = [];
    for (const model of plan.models) {
      for (const id of model.deployments) {
        const deployment = this.catalog.deployments.get(id)!;
        const candidate = { model, deployment };
        if (!tried.has(id) && this.health.available(id) && filter(candidate)) pool.push(candidate);
      }
      if (plan.mechanism !== 'model_family' && pool.length > 0) break;
    }
    let best: Candidate | null = null;
    for (const c of pool) if (!best || this.health.score(c.deployment.id) > this.health.score(best.deployment.id)) best = c;
    return best;
  }

  /** When nothing is available: how long until a deployment of the plan may be tried again. */
  private noCandidate(plan: RoutePlan, last: unknown): ApiError {
    if (last) return toCallerError(last);
    return new ApiError('PROVIDER_UNAVAILABLE', `No healthy deployment can serve ${plan.models.map((m) => m.id).join(', ')} right now.`);
  }

  /**
   * Runs one upstream call per attempt until one succeeds, failing over on what another
   * deployment may survive and honouring a short upstream Retry-After when no peer is left.
   */
  private async withFailover<T>(
    call: { plan: RoutePlan; signal: AbortSignal; log: Logger },
    attempts: Attempt[],
    run: (candidate: Candidate, signal: AbortSignal) => Promise<T>,
    filter?: (c: Candidate) => boolean,
  ): Promise<{ value: T; candidate: Candidate; settle: Settle }> {
    const tried = new Set<string>();
    let last: unknown = null;
    const { max_attempts: maxAttempts, retry_after_cap_ms: retryCap } = this.catalog.failover;
    while (attempts.length < maxAttempts) {
      if (call.signal.aborted) throw new ApiError('INTERNAL_ERROR', 'The client went away.');
      let candidate = this.next(call.plan, tried, filter);
      const retryAfter = last instanceof ProviderError && last.kind === 'rate_limit' ? last.details.retryAfterMs : undefined;
      if (!candidate && retryAfter !== undefined && retryAfter <= retryCap && tried.size > 0) {
        // Every peer is spent and the upstream asked for a short pause: wait once and retry it.
        await sleep(retryAfter, undefined, { signal: call.signal }).catch(() => undefined);
        tried.clear();
        candidate = this.next(call.plan, tried, filter);
      }
      if (!candidate) break;
      tried.add(candidate.deployment.id);
      const started = performance.now();
      const finish = this.health.begin(candidate.deployment.id);
      const attempt: Attempt = { deploymentId: candidate.deployment.id, modelId: candidate.model.id, outcome: 'ok' };
      attempts.push(attempt);
      try {
        const value = await run(candidate, call.signal);
        const deployment = candidate.deployment.id;
        const model = candidate.model.id;
        this.metrics?.upstreamLatency.observe({ deployment }, (performance.now() - started) / 1000);
        // Later failures of the same call (a stream that breaks) settle it too.
        const settle: Settle = (outcome) => {
          if (outcome.ok) {
            attempt.usage = outcome.usage;
            this.metrics?.upstreamCalls.inc({ deployment, outcome: 'ok' });
            if (outcome.usage) {
              this.metrics?.tokens.inc({ model, kind: 'prompt' }, outcome.usage.promptTokens);
              this.metrics?.tokens.inc({ model, kind: 'completion' }, outcome.usage.completionTokens);
            }
            return finish({ ok: true, latencyMs: performance.now() - started });
          }
          const facts = kindFacts(outcome.error);
          attempt.usage = outcome.usage;
          attempt.outcome = outcome.aborted ? 'aborted' : (facts.kind ?? 'error');
          this.metrics?.upstreamCalls.inc({ deployment, outcome: attempt.outcome });
          finish({ ok: false, error: (outcome.error as Error).message, countsAsFailure: !outcome.aborted && facts.unhealthy });
        };
        return { value, candidate, settle };
      } catch (error) {
        if (call.signal.aborted) {
          attempt.outcome = 'aborted';
          finish({ ok: false, error: 'client went away', countsAsFailure: false });
          throw error;
        }
        const facts = kindFacts(error);
        attempt.outcome = facts.kind ?? 'error';
        this.metrics?.upstreamCalls.inc({ deployment: candidate.deployment.id, outcome: attempt.outcome });
        finish({
          ok: false,
          error: (error as Error).message,
          countsAsFailure: facts.unhealthy,
          retryAfterMs: error instanceof ProviderError ? error.details.retryAfterMs : undefined,
        });
        call.log.warn({ deployment: candidate.deployment.id, kind: facts.kind, err: error }, 'upstream call failed');
        if (!facts.failover) throw toCallerError(error);
        last = error;
      }
    }
    throw this.noCandidate(call.plan, last);
  }

  async chat(call: ChatCall): Promise<ChatOutcome> {
    const attempts: Attempt[] = [];
    // Metering hook (usage-scope.ts): the request's attempts are billed once final.
    const metered = trackUsage(attempts);
    try {
      const { value, candidate, settle } = await this.withFailover(call, attempts, (c, signal) =>
        this.provider(c).chat(forCandidate(call.request, c), this.callContext(signal)),
      );
      settle({ ok: true, usage: value.usage });
      return { result: value, served: this.served(candidate), attempts };
    } finally {
      metered();
    }
  }

  /**
   * Opens a stream and waits for its first event: until then every failure fails over and
   * the caller can still answer with an HTTP error. After it, a break is resumed on another
   * deployment with the partial answer as an assistant prefix (when configured), or ends
   * the stream with the error.
   */
  async chatStream(call: ChatCall): Promise<GatewayStream> {
    const attempts: Attempt[] = [];
    const tried = new Set<string>();
    // Metering hook (usage-scope.ts): final when the stream ends, breaks or is left.
    const metered = trackUsage(attempts);
    const opened = await this.openStream(call, attempts, undefined, tried).catch((error: unknown) => {
      metered();
      throw error;
    });
    const gateway = this;
    const state = { served: this.served(opened.candidate) };
    const promptTokens = estimateMessageTokens(call.request.messages);
    async function* events(): AsyncGenerator<ChatStreamEvent> {
      let current = opened;
      let text = '';
      let toolCallsSent = false;
      // A refusal is never resumed (another upstream would go on as text, not as a refusal).
      let refusal = '';
      // Text of earlier attempts: a resumed attempt is billed for its own part only.
      let before = '';
      // What an attempt produced, when the upstream never reported it (it broke, or was left).
      const estimate = (): Usage => ({
        promptTokens: promptTokens + estimateTokens(before),
        completionTokens: estimateTokens(text.slice(before.length)) + estimateTokens(refusal),
      });
      try {
        while (true) {
          try {
            for (let event = await current.next(); event; event = await current.next()) {
              if (event.type === 'finish') {
                current.settle({ ok: true, usage: event.usage ?? estimate() });
                yield event;
                return;
              }
              if (event.content) text += event.content;
              if (event.refusal) refusal += event.refusal;
              if (event.toolCalls?.length) toolCallsSent = true;
              yield event;
            }
            throw new ProviderError('connection_dropped', 'The upstream stream ended without finishing.');
          } catch (error) {
            await current.close();
            current.settle({ ok: false, error, aborted: call.signal.aborted, usage: estimate() });
            if (call.signal.aborted) return;
            const facts = kindFacts(error);
            call.log.warn({ deployment: current.candidate.deployment.id, kind: facts.kind, err: error, sentChars: text.length }, 'upstream stream broke after it started');
            if (!facts.failover || !gateway.resumes(call.operation) || toolCallsSent || refusal) throw toCallerError(error);
            before = text;
            current = await gateway.openStream(call, attempts, text, tried).catch(() => {
              throw toCallerError(error);
            });
            state.served = gateway.served(current.candidate);
          }
        }
      } finally {
        // The consumer stopped early (output moderation, the client left): cancel the upstream call.
        if (!current.settled) {
          await current.close();
          current.settle({ ok: false, error: new Error('stream left by its consumer'), aborted: true, usage: estimate() });
        }
        metered();
      }
    }
    return {
      get served() {
        return state.served;
      },
      attempts,
      [Symbol.asyncIterator]: events,
    };
  }

  /** Tries deployments until one yields a first event that continues `prefix` (when resuming). */
  private async openStream(call: ChatCall, attempts: Attempt[], prefix: string | undefined, tried: Set<string>): Promise<OpenStream> {
    const { value, candidate, settle } = await this.withFailover(
      call,
      attempts,
      async (c, signal) => {
        const controller = new AbortController();
        const request: ChatRequest = { ...forCandidate(call.request, c), ...(prefix ? { assistantPrefix: prefix } : {}) };
        const iterator = this.provider(c).chatStream(request, this.callContext(AbortSignal.any([signal, controller.signal])))[Symbol.asyncIterator]();
        try {
          return { iterator, controller, buffered: await firstEvents(iterator, prefix) };
        } catch (error) {
          controller.abort();
          await iterator.return?.().catch(() => undefined);
          throw error;
        }
      },
      // A deployment whose stream broke earlier in this request is not asked to resume it.
      (c) => !tried.has(c.deployment.id) && (prefix === undefined || c.deployment.accepts_prefix),
    );
    tried.add(candidate.deployment.id);
    const { iterator, controller, buffered } = value;
    const stream: OpenStream = {
      candidate,
      settled: false,
      settle: (outcome) => {
        if (stream.settled) return;
        stream.settled = true;
        settle(outcome);
      },
      next: async () => {
        if (buffered.length > 0) return buffered.shift();
        const r = await iterator.next();
        return r.done ? undefined : r.value;
      },
      close: async () => {
        controller.abort();
        await iterator.return?.().catch(() => undefined);
      },
    };
    return stream;
  }

  /** Whether a broken stream of this operation is resumed elsewhere. */
  resumes(operation: string | undefined): boolean {
    const { routes, resume_streams: fallback } = this.catalog.failover;
    return (operation !== undefined ? routes[operation]?.resume_streams : undefined) ?? fallback;
  }

  async embed(modelId: string, input: string[], dimensions: number | undefined, signal: AbortSignal): Promise<{ result: EmbedResult; served: Served }> {
    const model = this.catalog.models.get(modelId)!;
    // Spec 7.1: no failover to another embedding provider; the model's first healthy deployment answers.
    const deploymentId = model.deployments.find((id) => this.health.available(id));
    if (!deploymentId) throw new ApiError('EMBEDDING_PROVIDER_UNAVAILABLE', `The embedding provider of ${model.id} is unavailable.`);
    const deployment = this.catalog.deployments.get(deploymentId)!;
    const candidate = { model, deployment };
    const finish = this.health.begin(deploymentId);
    const started = performance.now();
    try {
      const result = await this.provider(candidate).embed({ model: deployment.model, input, dimensions }, this.callContext(signal));
      finish({ ok: true, latencyMs: performance.now() - started });
      // Metering hook (usage-scope.ts): one upstream call, input tokens only.
      trackUsage([{ deploymentId, modelId: model.id, outcome: 'ok', usage: { promptTokens: result.promptTokens, completionTokens: 0 } }])();
      return { result, served: this.served(candidate) };
    } catch (error) {
      const facts = kindFacts(error);
      finish({ ok: false, error: (error as Error).message, countsAsFailure: facts.unhealthy });
      if (facts.failover || facts.kind === 'auth') throw new ApiError('EMBEDDING_PROVIDER_UNAVAILABLE', 'The embedding provider is temporarily unavailable.', { cause: error });
      throw toCallerError(error);
    }
  }

  /**
   * Draws an image on the deployment that served the request (its `image_model`). The
   * model already chose to call the tool, so there is no failover to another deployment.
   */
  async generateImage(served: Served, request: Omit<ImageRequest, 'model'>, signal: AbortSignal): Promise<ImageResult> {
    const provider = this.provider(served);
    if (!provider.generateImage) throw new ApiError('UNSUPPORTED_MODEL', `${served.model.id} cannot generate images on provider ${served.provider}.`, { param: 'tools' });
    const deploymentId = served.deployment.id;
    const finish = this.health.begin(deploymentId);
    const started = performance.now();
    try {
      const result = await provider.generateImage({ ...request, model: served.deployment.image_model ?? served.deployment.model }, this.callContext(signal));
      finish({ ok: true, latencyMs: performance.now() - started });
      // Metering hook (usage-scope.ts): one image, at the model's per-image price.
      trackUsage([{ deploymentId, modelId: served.model.id, outcome: 'ok', usage: { promptTokens: 0, completionTokens: 0 }, images: 1 }])();
      return result;
    } catch (error) {
      const facts = kindFacts(error);
      finish({ ok: false, error: (error as Error).message, countsAsFailure: facts.unhealthy });
      throw toCallerError(error);
    }
  }

  private provider(c: Candidate): Provider {
    return this.providers.get(c.deployment.provider)!;
  }

  async close(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.close()));
  }
}

/** What a stream used in all: the prompt of its first attempt, the output of every attempt (a resumed stream). */
export function streamUsage(attempts: readonly Attempt[]): Usage {
  const used = attempts.filter((a) => a.usage);
  const reasoningTokens = used.reduce((sum, a) => sum + (a.usage?.reasoningTokens ?? 0), 0);
  return {
    promptTokens: used[0]?.usage?.promptTokens ?? 0,
    completionTokens: used.reduce((sum, a) => sum + (a.usage?.completionTokens ?? 0), 0),
    ...(reasoningTokens ? { reasoningTokens } : {}),
  };
}

/** The request as one deployment gets it: its upstream model name; reasoning options only for reasoning models. */
function forCandidate(request: Omit<ChatRequest, 'model'>, c: Candidate): ChatRequest {
  const { reasoningEffort, ...rest } = request;
  return { ...rest, model: c.deployment.model, ...(reasoningEffort && c.model.capabilities.reasoning ? { reasoningEffort } : {}) };
}

/** Ends an attempt: its outcome, and what it used (an estimate when a stream broke or was left). */
type Settle = (outcome: { ok: true; usage?: Usage } | { ok: false; error: unknown; aborted?: boolean; usage?: Usage }) => void;

interface OpenStream {
  candidate: Candidate;
  /** The stream's events; the first is already buffered (the commit point has passed). */
  next(): Promise<ChatStreamEvent | undefined>;
  /** Settles the attempt once; later calls do nothing. */
  settle: Settle;
  settled: boolean;
  close(): Promise<void>;
}

/**
 * Reads until the stream's first event. When resuming, the continuation is buffered until
 * it shows whether the upstream really continued the prefix: one that starts the answer
 * over is treated as refusing the prefix.
 */
async function firstEvents(iterator: AsyncIterator<ChatStreamEvent>, prefix: string | undefined): Promise<ChatStreamEvent[]> {
  const events: ChatStreamEvent[] = [];
  const probe = prefix ? Math.min(prefix.trim().length, 24) : 0;
  let text = '';
  do {
    const next = await iterator.next();
    if (next.done) {
      if (events.length === 0) throw new ProviderError('empty_stream', 'The upstream stream ended before its first event.');
      break;
    }
    events.push(next.value);
    if (next.value.type !== 'delta') break;
    text += next.value.content ?? '';
  } while (text.trimStart().length < probe);
  const start = text.trimStart();
  if (probe > 0 && start.length >= probe && prefix!.trimStart().startsWith(start.slice(0, probe))) {
    throw new ProviderError('prefix_refused', 'The fallback started the answer over instead of continuing it.');
  }
  return events;
}
