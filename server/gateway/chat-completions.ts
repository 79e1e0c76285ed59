// The OpenAI chat-completions surface over the gateway: request → route plan and provider
// request; provider answer → `chat.completion` or `chat.completion.chunk` events with the
// routing facts. Guarded mode (v2) adds guardrails, output moderation and `tradition`;
// direct mode (v1) sends the request as it is.
import type { Logger } from 'pino';
import type { components } from '../../generated/types/openapi.js';
import { ApiError } from '../errors.js';
import type { ModelAccess } from '../identity/model-access.js';
import { traced, type RequestTrace } from '../observability/tracing.js';
import { LogsThrough } from '../logging.js';
import type { ChatMessage, ChatRequest, ChatStreamEvent, ResponseFormat, ToolChoice, ToolDefinition, Usage } from '../providers/types.js';
import type { CacheRequest, ResponseCache } from './cache/response-cache.js';
import { streamUsage, type CallScope, type ChatCall, type GatewayService, type GatewayStream, type Served } from './gateway-service.js';
import type { Guardrails, StreamModeration } from './guardrails.js';
import { routeHeader } from './route-header.js';
import { planRoute, tracedRoute, requestFeatures, type RoutePlan, type RouteSelector } from './routing.js';
import { withTradition, type Tradition } from './tradition.js';

type Schemas = components['schemas'];
export type ChatCompletionBody = Schemas['ChatCompletionRequestCommon'] & RouteSelector & { tradition?: Tradition; response_format?: ResponseFormat };
type ChatCompletion = Schemas['ChatCompletion'];
type ChatCompletionChunk = Schemas['ChatCompletionChunk'];

export interface CompletionContext extends CallScope {
  mode: 'guarded' | 'direct';
  /** The operationId serving the request (per-route gateway settings). */
  operation: string;
  traceId: string;
  /** Read only when something is logged: a request's logger is made on first use (http/request-log.ts). */
  readonly log: Logger;
  /** Set by the operations that offer the response cache (cache/response-cache.ts). */
  readonly cache?: CacheRequest;
  /** The models the caller's key may call (null: all). */
  readonly models: ModelAccess | null;
  /** The request's trace (null: not traced): routing, guardrails and each upstream attempt are spans of it. */
  readonly trace: RequestTrace | null;
}

/** The gateway call of a request's completion: its scope, and its logger read only when something logs. */
export function chatCall(ctx: CompletionContext, plan: RoutePlan, request: Omit<ChatRequest, 'model'>): ChatCall {
  return new CompletionCall(ctx, plan, request);
}

class CompletionCall extends LogsThrough implements ChatCall {
  readonly operation: string;
  readonly signal: AbortSignal;
  readonly meter: ChatCall['meter'];
  readonly trace: ChatCall['trace'];

  constructor(
    ctx: CompletionContext,
    readonly plan: RoutePlan,
    readonly request: Omit<ChatRequest, 'model'>,
  ) {
    super(ctx);
    this.operation = ctx.operation;
    this.signal = ctx.signal;
    this.meter = ctx.meter;
    this.trace = ctx.trace;
  }
}

/**
 * `headers`: the route the answer took (route-header.ts; none for a cached answer, which no
 * upstream gave). `cache`: whether the response cache answered (`hit`) or was asked in vain
 * (`miss`); absent when it does not apply.
 */
export type CompletionAnswer = ({ kind: 'json'; body: ChatCompletion } | { kind: 'stream'; stream: AsyncIterable<ChatCompletionChunk> }) & {
  headers: Record<string, string>;
  cache?: 'hit' | 'miss';
};

interface Routed {
  messages: ChatMessage[];
  request: Omit<ChatRequest, 'model'>;
  plan: RoutePlan;
}

export class ChatCompletions {
  constructor(
    private readonly gateway: GatewayService,
    private readonly guardrails: Guardrails,
    private readonly cache: ResponseCache | null = null,
  ) {}

  /**
   * What `create` refuses before any model call (no user message, the input guardrails, an
   * invalid route selector), checked alone: for a caller with costly work to do before the
   * completion (grounding retrieves passages), so a request refused anyway costs nothing.
   */
  async precheck(body: ChatCompletionBody, ctx: CompletionContext): Promise<void> {
    await this.admit(body, ctx);
  }

  /** `inputChecked`: `precheck` passed on the caller's messages, to which only the platform's own content was added since. */
  async create(body: ChatCompletionBody, ctx: CompletionContext, options: { inputChecked?: boolean } = {}): Promise<CompletionAnswer> {
    const guarded = ctx.mode === 'guarded';
    const { request, plan } = options.inputChecked ? this.route(body, ctx) : await this.admit(body, ctx);
    const facts = (served: Served) => routingFacts(plan, served, guarded ? (body.tradition ?? null) : null);
    const id = `chatcmpl-${ctx.traceId.replace(/^trc_/, '')}`;
    const created = Math.floor(Date.now() / 1000);
    const call = chatCall(ctx, plan, request);
    const includeUsage = body.stream_options?.include_usage === true;
    const slot = this.cache?.slot(ctx.cache, plan, request, { guarded, stream: body.stream === true, includeUsage }) ?? null;
    if (slot) {
      const hit = await slot.lookup(id, created);
      if (hit) return { ...hit, cache: 'hit', headers: {} };
    }
    const cache = slot ? ('miss' as const) : undefined;

    if (!body.stream) {
      const { result, served, attempts } = await this.gateway.chat(call);
      let { content, finishReason } = result;
      if (guarded && content && (await this.guardrails.blocksOutput(content, ctx.signal))) {
        content = '';
        finishReason = 'content_filter';
      }
      const answer: Extract<CompletionAnswer, { kind: 'json' }> = {
        kind: 'json',
        cache,
        body: {
          id,
          object: 'chat.completion',
          created,
          model: served.model.id,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: content ?? null,
                ...(result.refusal ? { refusal: result.refusal } : {}),
                ...(result.toolCalls?.length ? { tool_calls: result.toolCalls } : {}),
              },
              finish_reason: finishReason,
            },
          ],
          usage: usageOf(result.usage),
          ...facts(served),
        },
        headers: routeHeader(attempts),
      };
      slot?.keepJson(answer.body);
      return answer;
    }

    const upstream = await this.gateway.chatStream(call);
    const stream = new ChunkStream(upstream, guarded ? this.guardrails.monitor(ctx.signal) : null, { id, created, facts, includeUsage });
    return { kind: 'stream', stream: slot ? slot.record(stream) : stream, cache, headers: routeHeader(upstream.attempts) };
  }

  /** The messages, the provider request and its route: what `create` refuses before any check or call. */
  private route(body: ChatCompletionBody, ctx: CompletionContext): Routed {
    const guarded = ctx.mode === 'guarded';
    const messages = normalizeMessages(body.messages as ChatMessage[]);
    if (guarded && !messages.some((m) => m.role === 'user')) {
      throw new ApiError('NO_USER_MESSAGE', 'messages must contain at least one message with role "user".', { param: 'messages' });
    }
    this.gateway.catalog.imageUrls.check(messages, (i, j) => `messages[${i}].content[${j}].image_url.url`);
    const request = providerRequest(body, guarded ? withTradition(messages, body.tradition) : messages);
    const plan = tracedRoute(ctx.trace, guarded ? body : { model: body.model }, () =>
      planRoute(this.gateway.catalog, guarded ? body : { model: body.model }, requestFeatures(request), ctx.models),
    );
    return { messages, request, plan };
  }

  /** `route`, then the input guardrails: a request that cannot be routed is a 400 before a moderation call is spent on it. */
  private async admit(body: ChatCompletionBody, ctx: CompletionContext): Promise<Routed> {
    const routed = this.route(body, ctx);
    if (ctx.mode === 'guarded') await traced(ctx.trace, 'guardrails.input', {}, () => this.guardrails.checkInput(routed.messages, ctx.signal));
    return routed;
  }
}

type Choice = ChatCompletionChunk['choices'][number];
type Finish = Extract<ChatStreamEvent, { type: 'finish' }>;
const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * A gateway stream as `chat.completion.chunk`s: the role chunk, a chunk per delta (held back
 * or cut by output moderation on guarded routes), the finish chunk with the routing facts
 * of the deployment that finished, and the usage chunk when asked for. A hand-written
 * iterator: a read is the gateway read plus one `then` (an async generator's pending reads
 * outlive V8's young generation on slow streams).
 */
class ChunkStream implements AsyncIterableIterator<ChatCompletionChunk> {
  private readonly upstream: AsyncIterator<ChatStreamEvent>;
  // Chunks to send before reading on: the role chunk, then what the end adds.
  private readonly queue: ChatCompletionChunk[];
  private ended = false;

  constructor(
    private readonly stream: GatewayStream,
    private readonly moderation: StreamModeration | null,
    private readonly shape: { id: string; created: number; facts: (served: Served) => ReturnType<typeof routingFacts>; includeUsage: boolean },
  ) {
    this.upstream = stream[Symbol.asyncIterator]();
    this.queue = [this.chunk({ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }, shape.facts(stream.served))];
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<ChatCompletionChunk>> {
    const ready = this.queue.shift();
    if (ready) return Promise.resolve({ done: false, value: ready });
    if (this.ended) return Promise.resolve(DONE);
    return this.upstream.next().then(this.onEvent);
  }

  /** The consumer stopped: the gateway stream is left (its upstream call cancelled). */
  async return(): Promise<IteratorResult<ChatCompletionChunk>> {
    this.ended = true;
    this.queue.length = 0;
    await this.upstream.return?.();
    return DONE;
  }

  private readonly onEvent = (read: IteratorResult<ChatStreamEvent>): IteratorResult<ChatCompletionChunk> | Promise<IteratorResult<ChatCompletionChunk>> => {
    // A gateway stream ends without a finish only when the client left: nothing more to send.
    if (read.done) return this.end();
    const event = read.value;
    if (event.type === 'finish') return this.finish(event);
    if (event.content !== undefined && this.moderation) return this.moderate(event.content, event);
    return { done: false, value: this.delta(event.content, event) };
  };

  private async moderate(content: string, event: Extract<ChatStreamEvent, { type: 'delta' }>): Promise<IteratorResult<ChatCompletionChunk>> {
    let released: string | null;
    try {
      released = await this.moderation!.push(content);
    } catch (error) {
      // The moderator failed: the stream ends with its error, and the upstream call with it.
      await this.upstream.return?.();
      throw error;
    }
    if (released === null) {
      // The blocked text is not sent; leaving the gateway stream cancels the upstream call.
      await this.upstream.return?.();
      return this.close('content_filter');
    }
    if (released === '' && !event.toolCalls && event.refusal === undefined) return this.next();
    return { done: false, value: this.delta(released, event) };
  }

  private finish(finish: Finish): IteratorResult<ChatCompletionChunk> | Promise<IteratorResult<ChatCompletionChunk>> {
    if (finish.finishReason === 'content_filter' || !this.moderation) return this.close(finish.finishReason);
    return this.moderation.flush().then((rest) => {
      if (rest === null) return this.close('content_filter');
      if (rest) this.queue.push(this.chunk({ index: 0, delta: { content: rest }, finish_reason: null }));
      return this.close(finish.finishReason);
    });
  }

  /** Queues the finish chunk (a resumed stream names the deployment that finished it) and the usage chunk. */
  private close(reason: Finish['finishReason']): IteratorResult<ChatCompletionChunk> {
    const answered = this.shape.facts(this.stream.served);
    this.queue.push(this.chunk({ index: 0, delta: {}, finish_reason: reason }, answered));
    if (this.shape.includeUsage) this.queue.push(this.chunk(null, { usage: usageOf(streamUsage(this.stream.attempts)), ...answered }));
    this.ended = true;
    return { done: false, value: this.queue.shift()! };
  }

  private end(): IteratorResult<ChatCompletionChunk> {
    this.ended = true;
    return DONE;
  }

  private delta(content: string | undefined, event: Extract<ChatStreamEvent, { type: 'delta' }>): ChatCompletionChunk {
    return this.chunk({
      index: 0,
      delta: {
        ...(content !== undefined ? { content } : {}),
        ...(event.refusal !== undefined ? { refusal: event.refusal } : {}),
        ...(event.toolCalls ? { tool_calls: event.toolCalls } : {}),
      },
      finish_reason: null,
    });
  }

  private chunk(choice: Choice | null, extra: Partial<ChatCompletionChunk> = {}): ChatCompletionChunk {
    return { id: this.shape.id, object: 'chat.completion.chunk', created: this.shape.created, model: this.stream.served.model.id, choices: choice ? [choice] : [], ...extra };
  }
}

/** `developer` is OpenAI's newer name for `system`. */
function normalizeMessages(messages: ChatMessage[]): ChatMessage[] {
  return messages.map((m) => ((m.role as string) === 'developer' ? { ...m, role: 'system' } : m));
}

function providerRequest(body: ChatCompletionBody, messages: ChatMessage[]): Omit<ChatRequest, 'model'> {
  const stop = body.stop === null || body.stop === undefined ? undefined : typeof body.stop === 'string' ? [body.stop] : body.stop;
  return {
    messages,
    maxTokens: body.max_tokens ?? body.max_completion_tokens,
    temperature: body.temperature,
    topP: body.top_p,
    stop,
    tools: body.tools as ToolDefinition[] | undefined,
    toolChoice: body.tool_choice as ToolChoice | undefined,
    parallelToolCalls: body.parallel_tool_calls,
    responseFormat: body.response_format,
    user: body.user,
    promptCacheKey: body.prompt_cache_key,
  };
}

function routingFacts(plan: RoutePlan, served: Served, tradition: Tradition | null) {
  return {
    provider: served.provider,
    model_family: served.model.family,
    auto_routing: plan.mechanism === 'auto_routing',
    routing_mechanism: plan.mechanism,
    routing_tier: plan.tier,
    routing_confidence: plan.confidence,
    tradition,
  } as const;
}

/** OpenAI's usage; `prompt_tokens_details` when part of the prompt was read from or written to a prompt cache. */
function usageOf(usage: Usage) {
  const { cachedTokens = 0, cacheWriteTokens = 0 } = usage;
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    ...(cachedTokens || cacheWriteTokens ? { prompt_tokens_details: { cached_tokens: cachedTokens, cache_write_tokens: cacheWriteTokens } } : {}),
  };
}

