// The inference gateway: every model call of the platform goes through here (chat
// completions, the Responses API, grounded answers, embeddings). It picks a deployment for
// a route plan, fails over before the first byte reaches the client, resumes a stream that
// breaks after it started, and keeps each deployment's health.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ApiError } from '../errors.js';
import { LogsThrough } from '../logging.js';
import type { Metrics } from '../observability/metrics.js';
import {
  ProviderError,
  type CallContext,
  type CallTimeouts,
  type ChatMessage,
  type ChatRequest,
  type ChatResult,
  type ChatStreamEvent,
  type EmbedResult,
  type ImageRequest,
  type ImageResult,
  type Provider,
  type Usage,
} from '../providers/types.js';
import { LinkedAbortController } from '../providers/linked-abort.js';
import { estimateTokens } from '../providers/local/tokens.js';
import type { Catalog, DeploymentConfig, ModelConfig, Served } from './catalog.js';
import { kindFacts, toCallerError } from './errors.js';
import type { DeploymentHealth } from './health.js';
import type { RoutePlan } from './routing.js';
import { CommittedStream, type OpenStream, type StreamScope } from './committed-stream.js';
import { estimateUsage, UpstreamCall, type Attempt } from './upstream-call.js';
import { trackUsage, type UsageMeter } from './usage-scope.js';

export type { Served } from './catalog.js';
export type { Attempt } from './upstream-call.js';

/** What every gateway call of a request carries: its abort signal and, when metered, its usage meter. */
export interface CallScope {
  /** Aborted when the client goes away: the upstream call is cancelled. */
  signal: AbortSignal;
  /**
   * Where the call's upstream attempts are reported for billing (usage-scope.ts); null for
   * work nobody is billed for (ingestion, probes). Required, so a call cannot forget it.
   */
  meter: UsageMeter | null;
}

export interface ChatCall extends CallScope {
  plan: RoutePlan;
  /** The operation asking (failover.routes may configure it differently). */
  operation?: string;
  request: Omit<ChatRequest, 'model'>;
  log: Logger;
}

export interface ChatOutcome {
  /** `usage` is the upstream's, or estimated when it reported none. */
  result: ChatResult & { usage: Usage };
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
  served: Served;
}

export class GatewayService {
  /** Each model's deployments as routing candidates, built once. */
  private readonly candidates = new Map<string, Candidate[]>();
  private readonly timeouts: CallTimeouts;

  constructor(
    readonly catalog: Catalog,
    private readonly providers: ReadonlyMap<string, Provider>,
    readonly health: DeploymentHealth,
    private readonly metrics?: Metrics,
  ) {
    const t = catalog.timeouts;
    this.timeouts = { connectMs: t.connect_ms, firstTokenMs: t.first_token_ms, idleMs: t.idle_ms };
    for (const model of catalog.models.values()) {
      this.candidates.set(
        model.id,
        model.deployments.map((id) => {
          const deployment = catalog.deployments.get(id)!;
          return { model, deployment, served: { model, deployment, provider: deployment.provider } };
        }),
      );
    }
  }

  private callContext(signal: AbortSignal): CallContext {
    return { signal, timeouts: this.timeouts };
  }

  private eligible(c: Candidate, tried: ReadonlySet<string>, filter: ((c: Candidate) => boolean) | undefined): boolean {
    return !tried.has(c.deployment.id) && this.health.available(c.deployment.id) && (filter === undefined || filter(c));
  }

  /**
   * The next deployment to try: healthy and not tried yet. Auto-routing and direct
   * selection keep the plan's model order; model_family weighs all of the family's
   * deployments together. Among those of the lowest `order`, the least loaded (in flight
   * per unit of weight) compete: one is drawn at random by weight, so that sequential
   * traffic spreads by weight too.
   */
  private next(plan: RoutePlan, tried: ReadonlySet<string>, filter?: (c: Candidate) => boolean): Candidate | null {
    const { models } = plan;
    let order = Infinity;
    let least = Infinity;
    let total = 0;
    let scope = models.length;
    for (let m = 0; m < models.length; m++) {
      for (const c of this.candidates.get(models[m].id)!) {
        if (c.deployment.order > order || !this.eligible(c, tried, filter)) continue;
        const load = this.health.load(c.deployment.id);
        if (c.deployment.order < order || load < least) {
          order = c.deployment.order;
          least = load;
          total = c.deployment.weight;
        } else if (load === least) total += c.deployment.weight;
      }
      if (plan.mechanism !== 'model_family' && total > 0) {
        scope = m + 1;
        break;
      }
    }
    if (total === 0) return null;
    let pick = Math.random() * total;
    let last: Candidate | null = null;
    for (let m = 0; m < scope; m++) {
      for (const c of this.candidates.get(models[m].id)!) {
        if (c.deployment.order !== order || !this.eligible(c, tried, filter) || this.health.load(c.deployment.id) !== least) continue;
        last = c;
        pick -= c.deployment.weight;
        if (pick < 0) return c;
      }
    }
    return last;
  }

  /** When nothing is available: the last upstream failure, else 503. */
  private noCandidate(plan: RoutePlan, last: unknown): ApiError {
    if (last) return toCallerError(last);
    return new ApiError('PROVIDER_UNAVAILABLE', `No healthy deployment can serve ${plan.models.map((m) => m.id).join(', ')} right now.`);
  }

  /**
   * Runs one upstream call per attempt until one succeeds, failing over on what another
   * deployment may survive and honouring a short upstream Retry-After when no peer is left.
   * The returned call is still open: the caller settles it.
   */
  private async withFailover<T>(
    call: { plan: RoutePlan; signal: AbortSignal; log: Logger },
    attempts: Attempt[],
    run: (candidate: Candidate, signal: AbortSignal) => Promise<T>,
    filter?: (c: Candidate) => boolean,
  ): Promise<{ value: T; candidate: Candidate; upstream: UpstreamCall }> {
    const tried = new Set<string>();
    let last: unknown = null;
    let lastDeployment = '';
    const { max_attempts: maxAttempts, retry_after_cap_ms: retryCap } = this.catalog.failover;
    while (attempts.length < maxAttempts) {
      if (call.signal.aborted) throw new ApiError('INTERNAL_ERROR', 'The client went away.');
      let candidate = this.next(call.plan, tried, filter);
      const retryAfter = last instanceof ProviderError && last.kind === 'rate_limit' ? last.details.retryAfterMs : undefined;
      if (!candidate && retryAfter !== undefined && retryAfter <= retryCap && tried.size > 0) {
        // Every peer is spent and the upstream asked for a short pause: wait it out (by the
        // health clock, which a timer may beat by a millisecond) and retry once.
        for (let wait = retryAfter; wait > 0 && !call.signal.aborted; wait = this.health.pauseLeft(lastDeployment)) {
          await sleep(wait, undefined, { signal: call.signal }).catch(() => undefined);
        }
        tried.clear();
        candidate = this.next(call.plan, tried, filter);
      }
      if (!candidate) break;
      tried.add(candidate.deployment.id);
      const upstream = new UpstreamCall(candidate.deployment.id, candidate.model.id, this.health, this.metrics);
      attempts.push(upstream.attempt);
      try {
        const value = await run(candidate, call.signal);
        upstream.answered();
        return { value, candidate, upstream };
      } catch (error) {
        upstream.fail(error, call.signal.aborted);
        if (call.signal.aborted) throw error;
        const facts = kindFacts(error);
        call.log.warn({ deployment: candidate.deployment.id, kind: facts.kind, err: error }, 'upstream call failed');
        if (!facts.failover) throw toCallerError(error);
        last = error;
        lastDeployment = candidate.deployment.id;
      }
    }
    throw this.noCandidate(call.plan, last);
  }

  async chat(call: ChatCall): Promise<ChatOutcome> {
    const attempts: Attempt[] = [];
    // Metering hook (usage-scope.ts): the request's attempts are billed once final.
    const metered = trackUsage(call.meter, attempts);
    try {
      const { value, candidate, upstream } = await this.withFailover(call, attempts, (c, signal) =>
        this.provider(c).chat(forCandidate(call.request, c), this.callContext(signal)),
      );
      // Some compatible upstreams report no usage: count it as a stream's is counted.
      const usage = value.usage ?? estimateUsage(call.request.messages, '', value.content ?? '', value.toolCalls);
      upstream.succeed(usage);
      return { result: { ...value, usage }, served: candidate.served, attempts };
    } finally {
      metered();
    }
  }

  /**
   * Opens a stream and waits for its first event: until then every failure fails over and
   * the caller can still answer with an HTTP error. After it, a break is resumed on another
   * deployment with the partial answer as an assistant prefix (when configured), or ends
   * the stream with the error (committed-stream.ts).
   */
  async chatStream(call: ChatCall): Promise<GatewayStream> {
    const attempts: Attempt[] = [];
    const tried = new Set<string>();
    // Metering hook (usage-scope.ts): final when the stream ends, breaks or is left.
    const metered = trackUsage(call.meter, attempts);
    const first = await this.openStream(call, attempts, undefined, tried).catch((error: unknown) => {
      metered();
      throw error;
    });
    const resume = this.resumes(call.operation) ? (prefix: string) => this.openStream(call, attempts, prefix, tried) : undefined;
    return new CommittedStream(first, attempts, new CallStreamScope(call, resume, metered));
  }

  /** Tries deployments until one yields a first event that continues `prefix` (when resuming). */
  private async openStream(call: ChatCall, attempts: Attempt[], prefix: string | undefined, tried: Set<string>): Promise<OpenStream> {
    const { value, candidate, upstream } = await this.withFailover(
      call,
      attempts,
      async (c, signal) => {
        const controller = new LinkedAbortController(signal);
        const request = forCandidate(call.request, c);
        if (prefix) request.assistantPrefix = { text: prefix, mode: c.deployment.prefix };
        const iterator = this.provider(c).chatStream(request, this.callContext(controller.signal))[Symbol.asyncIterator]();
        try {
          return { iterator, controller, buffered: await firstEvents(iterator, prefix) };
        } catch (error) {
          controller.abort();
          await iterator.return?.().catch(() => undefined);
          throw error;
        }
      },
      // A deployment whose stream broke earlier in this request is not asked to resume it,
      // nor one whose upstream cannot continue a prefix.
      (c) => !tried.has(c.deployment.id) && (prefix === undefined || c.deployment.prefix !== 'none'),
    );
    tried.add(candidate.deployment.id);
    const { iterator, controller, buffered } = value;
    return {
      served: candidate.served,
      upstream,
      next: () => (buffered.length > 0 ? Promise.resolve({ done: false, value: buffered.shift()! }) : iterator.next()),
      close: async () => {
        controller.abort();
        await iterator.return?.().catch(() => undefined);
      },
      unlink: () => controller.unlink(),
    };
  }

  /** Whether a broken stream of this operation is resumed elsewhere. */
  resumes(operation: string | undefined): boolean {
    const { routes, resume_streams: fallback } = this.catalog.failover;
    return (operation !== undefined ? routes[operation]?.resume_streams : undefined) ?? fallback;
  }

  async embed(modelId: string, input: string[], dimensions: number | undefined, { signal, meter }: CallScope): Promise<{ result: Required<EmbedResult>; served: Served }> {
    // Spec 7.1: no failover to another embedding provider; the model's first healthy deployment answers.
    const candidate = this.candidates.get(modelId)!.find((c) => this.health.available(c.deployment.id));
    if (!candidate) throw new ApiError('EMBEDDING_PROVIDER_UNAVAILABLE', `The embedding provider of ${modelId} is unavailable.`);
    const upstream = new UpstreamCall(candidate.deployment.id, modelId, this.health, this.metrics);
    try {
      const result = await this.provider(candidate).embed({ model: candidate.deployment.model, input, dimensions }, this.callContext(signal));
      upstream.answered();
      // Some compatible upstreams report no usage: estimate it rather than bill nothing.
      const promptTokens = result.promptTokens ?? input.reduce((sum, text) => sum + estimateTokens(text), 0);
      upstream.succeed({ promptTokens, completionTokens: 0 });
      // Metering hook (usage-scope.ts): one upstream call, input tokens only.
      trackUsage(meter, [upstream.attempt])();
      return { result: { ...result, promptTokens }, served: candidate.served };
    } catch (error) {
      upstream.fail(error, signal.aborted);
      const facts = kindFacts(error);
      if (facts.failover || facts.kind === 'auth') throw new ApiError('EMBEDDING_PROVIDER_UNAVAILABLE', 'The embedding provider is temporarily unavailable.', { cause: error });
      throw toCallerError(error);
    }
  }

  /**
   * Draws an image on the deployment that served the request (its `image_model`). The
   * model already chose to call the tool, so there is no failover to another deployment.
   */
  async generateImage(served: Served, request: Omit<ImageRequest, 'model'>, { signal, meter }: CallScope): Promise<ImageResult> {
    const provider = this.provider(served);
    if (!provider.generateImage) throw new ApiError('UNSUPPORTED_MODEL', `${served.model.id} cannot generate images on provider ${served.provider}.`, { param: 'tools' });
    const upstream = new UpstreamCall(served.deployment.id, served.model.id, this.health, this.metrics);
    try {
      const result = await provider.generateImage({ ...request, model: served.deployment.image_model ?? served.deployment.model }, this.callContext(signal));
      upstream.answered();
      // Metering hook (usage-scope.ts): one image, at the model's per-image price.
      upstream.attempt.images = 1;
      upstream.succeed({ promptTokens: 0, completionTokens: 0 });
      trackUsage(meter, [upstream.attempt])();
      return result;
    } catch (error) {
      upstream.fail(error, signal.aborted);
      throw toCallerError(error);
    }
  }

  private provider(c: { deployment: DeploymentConfig }): Provider {
    return this.providers.get(c.deployment.provider)!;
  }

  async close(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.close()));
  }
}

/** What a stream used in all: the prompt of its first attempt (and its prompt-cache use), the output of every attempt (a resumed stream). */
export function streamUsage(attempts: readonly Attempt[]): Usage {
  const used = attempts.filter((a) => a.usage);
  const reasoningTokens = used.reduce((sum, a) => sum + (a.usage?.reasoningTokens ?? 0), 0);
  const { cachedTokens, cacheWriteTokens, cacheWrite1hTokens } = used[0]?.usage ?? {};
  return {
    promptTokens: used[0]?.usage?.promptTokens ?? 0,
    completionTokens: used.reduce((sum, a) => sum + (a.usage?.completionTokens ?? 0), 0),
    ...(reasoningTokens ? { reasoningTokens } : {}),
    ...(cachedTokens || cacheWriteTokens ? { cachedTokens, cacheWriteTokens, cacheWrite1hTokens } : {}),
  };
}

/** The request as one deployment gets it: its upstream model name; reasoning options only for reasoning models. */
function forCandidate(request: Omit<ChatRequest, 'model'>, c: Candidate): ChatRequest {
  const { reasoningEffort, ...rest } = request;
  return { ...rest, model: c.deployment.model, ...(reasoningEffort && c.model.capabilities.reasoning ? { reasoningEffort } : {}) };
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

/** What a committed stream needs of its call. */
class CallStreamScope extends LogsThrough implements StreamScope {
  readonly messages: ChatMessage[];
  readonly signal: AbortSignal;

  constructor(
    call: ChatCall,
    readonly resume: StreamScope['resume'],
    readonly metered: () => void,
  ) {
    super(call);
    this.messages = call.request.messages;
    this.signal = call.signal;
  }
}
