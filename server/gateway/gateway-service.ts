// The inference gateway: every model call of the platform goes through here (chat
// completions, the Responses API, grounded answers, embeddings). It picks a deployment for
// a route plan, fails over before the first byte reaches the client, resumes a stream that
// breaks after it started, and keeps each deployment's health.
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
import { kindFacts, toCallerError } from './upstream-failures.js';
import type { DeploymentHealth } from './health.js';
import type { RoutePlan } from './routing.js';
import { CommittedStream, type OpenStream, type StreamScope } from './committed-stream.js';
import { estimateUsage, UpstreamCall, type Attempt } from './upstream-call.js';
import { continuationRequest, joinedContinuation, restartProbe, startsOver } from './continuation.js';
import { RouteWalk, type Candidate, type RetryPolicy, type WalkOptions } from './route-walk.js';
import { trackUsage, type UsageMeter } from './usage-scope.js';
import type { RequestTrace, TraceSpan } from '../observability/tracing.js';

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
  /** The request's trace: each upstream attempt is a span of it (absent or null: not traced). */
  trace?: RequestTrace | null;
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

/**
 * One catalog and what is built from it: its providers and each model's deployments as
 * routing candidates. A reload (reload.ts) makes a new one for the requests that start
 * after it; a request routed before keeps its own (its plan names its catalog).
 */
interface Generation {
  catalog: Catalog;
  providers: ReadonlyMap<string, Provider>;
  candidates: Map<string, Candidate[]>;
  timeouts: CallTimeouts;
}

function generation(catalog: Catalog, providers: ReadonlyMap<string, Provider>): Generation {
  const t = catalog.timeouts;
  const candidates = new Map<string, Candidate[]>();
  for (const model of catalog.models.values()) {
    candidates.set(
      model.id,
      model.deployments.map((id) => {
        const deployment = catalog.deployments.get(id)!;
        return { model, deployment, served: { model, deployment, provider: deployment.provider } };
      }),
    );
  }
  return { catalog, providers, candidates, timeouts: { connectMs: t.connect_ms, firstTokenMs: t.first_token_ms, idleMs: t.idle_ms } };
}

export class GatewayService {
  private current: Generation;
  /** Earlier generations, while requests routed on them may still run. */
  private readonly generations = new WeakMap<Catalog, Generation>();

  constructor(
    catalog: Catalog,
    providers: ReadonlyMap<string, Provider>,
    readonly health: DeploymentHealth,
    private readonly metrics?: Metrics,
  ) {
    this.current = generation(catalog, providers);
    this.generations.set(catalog, this.current);
  }

  /** The catalog new requests are routed on. */
  get catalog(): Catalog {
    return this.current.catalog;
  }

  /** From now on, new requests are routed on `catalog` (its providers given); those routed before finish on theirs. */
  swap(catalog: Catalog, providers: ReadonlyMap<string, Provider>): void {
    this.current = generation(catalog, providers);
    this.generations.set(catalog, this.current);
  }

  /** The generation a request was routed on (its plan's catalog). */
  private of(plan: { catalog: Catalog }): Generation {
    return this.generations.get(plan.catalog) ?? this.current;
  }

  private callContext(signal: AbortSignal, gen: Generation = this.current): CallContext {
    return { signal, timeouts: gen.timeouts };
  }

  /** How a model is retried before it is left: the route's settings, else the model's, else the gateway's. */
  private retryPolicy(catalog: Catalog, operation: string | undefined, model: ModelConfig): RetryPolicy {
    const { routes, retries, retry_after_cap_ms: cap } = catalog.failover;
    const route = operation !== undefined ? routes[operation] : undefined;
    return {
      retries: route?.retries ?? model.failover.retries ?? retries,
      retryAfterCapMs: route?.retry_after_cap_ms ?? model.failover.retry_after_cap_ms ?? cap,
    };
  }

  /**
   * Runs one upstream call per attempt along the route (route-walk.ts) until one succeeds.
   * The returned call is still open: the caller settles it.
   */
  private async withFailover<T>(
    call: ChatCall,
    attempts: Attempt[],
    run: (candidate: Candidate, signal: AbortSignal) => Promise<T>,
    options?: WalkOptions,
  ): Promise<{ value: T; candidate: Candidate; upstream: UpstreamCall }> {
    const gen = this.of(call.plan);
    const walk = new RouteWalk(gen.catalog, gen.candidates, this.health, call.plan, (model) => this.retryPolicy(gen.catalog, call.operation, model), options);
    const { max_attempts: maxAttempts } = gen.catalog.failover;
    while (attempts.length < maxAttempts) {
      if (call.signal.aborted) throw new ApiError('INTERNAL_ERROR', 'The client went away.');
      const candidate = await walk.next(call.signal, maxAttempts - attempts.length);
      if (!candidate) break;
      const upstream = new UpstreamCall(candidate.deployment.id, candidate.model.id, this.health, this.metrics, attemptSpan(call.trace, 'chat', candidate, gen.catalog));
      attempts.push(upstream.attempt);
      try {
        const value = await run(candidate, call.signal);
        upstream.answered();
        return { value, candidate, upstream };
      } catch (error) {
        upstream.fail(error, call.signal.aborted);
        if (call.signal.aborted) throw error;
        call.log.warn({ deployment: candidate.deployment.id, kind: kindFacts(error).kind, err: error }, 'upstream call failed');
        walk.failed(candidate, error);
      }
    }
    throw walk.exhausted();
  }

  async chat(call: ChatCall): Promise<ChatOutcome> {
    const attempts: Attempt[] = [];
    // Metering hook (usage-scope.ts): the request's attempts are billed once final.
    const metered = trackUsage(call.meter, attempts);
    try {
      const { value, candidate, upstream } = await this.withFailover(call, attempts, (c, signal) =>
        this.provider(c, this.of(call.plan)).chat(forCandidate(call.request, c), this.callContext(signal, this.of(call.plan))),
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
   * deployment with the partial answer (when the route resumes streams), or ends the stream
   * with the error (committed-stream.ts).
   */
  async chatStream(call: ChatCall): Promise<GatewayStream> {
    const attempts: Attempt[] = [];
    // Deployments that streamed in this request (their stream broke, or is the one running).
    const streamed = new Set<string>();
    // Metering hook (usage-scope.ts): final when the stream ends, breaks or is left.
    const metered = trackUsage(call.meter, attempts);
    const first = await this.openStream(call, attempts, undefined, streamed).catch((error: unknown) => {
      metered();
      throw error;
    });
    const resume = this.resumes(call.operation, call.plan.catalog) ? (prefix: string) => this.openStream(call, attempts, prefix, streamed) : undefined;
    return new CommittedStream(first, attempts, new CallStreamScope(call, resume, metered));
  }

  /**
   * Tries deployments until one yields a first event. When resuming, that event continues
   * `prefix`: asked as an assistant prefix where the deployment continues one, else (prefix
   * `none`, or it refused the prefixed request) for the rest of the quoted answer in a user
   * turn (continuation.ts).
   */
  private async openStream(call: ChatCall, attempts: Attempt[], prefix: string | undefined, streamed: Set<string>): Promise<OpenStream> {
    // Deployments asked in a user turn: declared `prefix: none`, or found refusing the prefix in this request.
    const userTurn = new Set<string>();
    const { value, candidate, upstream } = await this.withFailover(
      call,
      attempts,
      async (c, signal) => {
        const controller = new LinkedAbortController(signal);
        let request = forCandidate(call.request, c);
        const asked = prefix === undefined ? undefined : userTurn.has(c.deployment.id) || c.deployment.prefix === 'none' ? 'user_turn' : 'prefix';
        if (asked === 'prefix') request.assistantPrefix = { text: prefix!, mode: c.deployment.prefix };
        if (asked === 'user_turn') request = continuationRequest(request, prefix!);
        const gen = this.of(call.plan);
        const iterator = this.provider(c, gen).chatStream(request, this.callContext(controller.signal, gen))[Symbol.asyncIterator]();
        try {
          const buffered = asked === 'user_turn' ? await joinedContinuation(iterator, prefix!) : await firstEvents(iterator, prefix);
          return { iterator, controller, buffered };
        } catch (error) {
          controller.abort();
          await iterator.return?.().catch(() => undefined);
          throw error;
        }
      },
      {
        // A deployment whose stream broke earlier in this request is not asked to resume it.
        filter: (c) => !streamed.has(c.deployment.id),
        // One that refused the prefix (a 400, or starting over) is asked again at once, in a user turn.
        tryAgain: (c, error) => {
          if (prefix === undefined || userTurn.has(c.deployment.id) || c.deployment.prefix === 'none') return false;
          if (!(error instanceof ProviderError) || error.kind !== 'prefix_refused') return false;
          userTurn.add(c.deployment.id);
          return true;
        },
      },
    );
    streamed.add(candidate.deployment.id);
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
  resumes(operation: string | undefined, catalog: Catalog = this.catalog): boolean {
    const { routes, resume_streams: fallback } = catalog.failover;
    return (operation !== undefined ? routes[operation]?.resume_streams : undefined) ?? fallback;
  }

  async embed(modelId: string, input: string[], dimensions: number | undefined, { signal, meter, trace }: CallScope): Promise<{ result: Required<EmbedResult>; served: Served }> {
    // Spec 7.1: no failover to another embedding provider; the model's first healthy deployment answers.
    const candidate = this.current.candidates.get(modelId)!.find((c) => this.health.available(c.deployment.id));
    if (!candidate) throw new ApiError('EMBEDDING_PROVIDER_UNAVAILABLE', `The embedding provider of ${modelId} is unavailable.`);
    const upstream = new UpstreamCall(candidate.deployment.id, modelId, this.health, this.metrics, attemptSpan(trace, 'embeddings', candidate, this.catalog));
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

  private provider(c: { deployment: DeploymentConfig }, gen: Generation = this.current): Provider {
    return gen.providers.get(c.deployment.provider)!;
  }

  /** Closes the current generation's providers (a reload closes those it replaced: reload.ts). */
  async close(): Promise<void> {
    await Promise.all([...this.current.providers.values()].map((p) => p.close()));
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

/**
 * An upstream attempt's span, named and described as the GenAI semantic conventions say
 * (`{operation} {model}`; the provider as gen_ai.provider.name and, for older backends,
 * gen_ai.system); UpstreamCall adds the token counts and ends it.
 */
function attemptSpan(trace: RequestTrace | null | undefined, operation: 'chat' | 'embeddings', c: Candidate, catalog: Catalog): TraceSpan | null {
  if (!trace) return null;
  const system = catalog.providers.get(c.deployment.provider)?.type ?? 'local';
  return trace.span(`${operation} ${c.model.id}`, {
    'gen_ai.operation.name': operation,
    'gen_ai.provider.name': system,
    'gen_ai.system': system,
    'gen_ai.request.model': c.model.id,
    'gen_ai.response.model': c.deployment.model,
    'gateway.deployment': c.deployment.id,
    'gateway.provider': c.deployment.provider,
  });
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
  const probe = prefix ? restartProbe(prefix) : 0;
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
  if (prefix && startsOver(prefix, text)) throw new ProviderError('prefix_refused', 'The fallback started the answer over instead of continuing it.');
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
